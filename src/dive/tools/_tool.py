"""The tool abstraction: ``Tool``, annotations, previews, outputs and the run context.

A tool is anything with a :class:`~dive.messages.ToolDefinition` and an async ``call``.
Failures are data: a tool that raises produces an ``is_error`` result, never a crashed turn.
A tool suspends by *returning* :class:`Suspend`, never by raising.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dive.messages import DocumentBlock, ImageBlock, TextBlock, ToolDefinition
from dive.messages.codec import EMPTY, JSONValue, empty

if TYPE_CHECKING:
    from dive.tools._context import ToolContext

__all__ = [
    "Background",
    "Suspend",
    "SuspendReason",
    "Tool",
    "ToolAnnotations",
    "ToolCallPreview",
    "ToolOutput",
    "ToolReturn",
]

SuspendReason = Literal["input_required", "auth_required", "approval_required"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAnnotations:
    """Behaviour hints. ``None`` keeps MCP's "unset"; set hints fill governance fields.

    Attributes:
        title: a human-readable title.
        read_only: the tool changes nothing (``effect_type="read_only"``).
        destructive: the tool may delete or overwrite (``effect_type="write"``).
        idempotent: calling it twice equals calling it once.
        open_world: the tool reaches outside the workspace (network, other systems;
            ``effect_type="external_side_effect"``, which wins over ``write``).
        edit: the tool edits files (``effect_type="write"``).
        sequential_only: any call to it makes its batch sequential.
        halts_batch: a failed call stops the rest of its batch.
        extra: other hints, JSON (an MCP server's own annotations, say).
    """

    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    edit: bool | None = None
    sequential_only: bool = False
    halts_batch: bool = False
    extra: Mapping[str, JSONValue] = field(default_factory=empty)

    def effect_type(self) -> Literal["read_only", "write", "external_side_effect"] | None:
        """The effect type the hints imply (open world wins over write), or None."""
        if self.open_world:
            return "external_side_effect"
        if self.destructive or self.edit:
            return "write"
        if self.read_only:
            return "read_only"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallPreview:
    """A summary of what a call will do, computed before it runs (for approval UIs).

    Attributes:
        summary: one line saying what the call will do.
        details: more detail (a diff, the full command), if any.
    """

    summary: str
    details: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolReturn:
    """A tool output with an optional UI rendering and error flag.

    Attributes:
        content: what the model sees (text, a JSON-able value, content blocks).
        display: a rendering for people (UIs), not sent to the model.
        is_error: the call failed (the model sees an error result).
        terminal: end the turn once this batch is done, like a ``terminal`` tool's success.
        structured: a JSON value kept as the result's ``structured`` beside ``content`` (an
            MCP tool's ``structuredContent``); None keeps what ``content`` gives.
    """

    content: Any
    display: str | None = None
    is_error: bool = False
    terminal: bool = False
    structured: JSONValue = None


@dataclass(frozen=True, slots=True)
class Suspend:
    """Returned by a tool to suspend the turn until a result is supplied.

    ``Suspend("Which account?", reason="input_required", metadata={...})``: the prompt is
    positional, the rest keyword-only.

    Attributes:
        prompt: what the call waits for, shown to whoever answers it.
        reason: ``input_required``, ``auth_required`` or ``approval_required``.
        metadata: JSON details for the answering side (kept in the pending call).
        call_again: by default the value supplied on resume *is* the call's result. With
            ``call_again=True`` the tool is called again instead, with the same input and
            the supplied value in ``ctx.resumed``; what that call returns is the result (it
            may suspend again). For a tool that must hand the answer to something else, as
            an MCP server's elicitation is answered by re-sending the call.
    """

    prompt: str
    _: KW_ONLY
    reason: SuspendReason = "input_required"
    metadata: Mapping[str, JSONValue] = field(default_factory=empty)
    call_again: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Background:
    """Returned by a tool to finish its work after its turn: the result comes in a later turn.

    The model at once gets a result saying the work started as task ``task_<call id>``;
    ``fn`` runs in a task of its own that outlives the batch and the turn. The result's
    ``background_tasks`` holds its :class:`~dive.agent.BackgroundTaskHandle`; pass what
    :func:`~dive.agent.await_background_tasks` returns to ``run(background_results=...)``
    to deliver it (a turn whose reminder names each call). The task lives in this process:
    one that exits loses it.

    Attributes:
        description: what the work does (in the started result and the handle).
        fn: the work: an async function whose return value is the call's result (any tool
            output but ``Suspend`` or ``Background``).
    """

    description: str
    fn: Callable[[], Awaitable[Any]]


ToolOutput = (
    str
    | TextBlock
    | ImageBlock
    | DocumentBlock
    | Sequence[TextBlock | ImageBlock | DocumentBlock]
    | ToolReturn
    | Suspend
    | Background
    | JSONValue
    | Any
)


class Tool(abc.ABC):
    """Base class of every tool.

    Subclasses set ``definition`` and implement ``call``. ``validate`` checks and converts
    the model's arguments before ``call``; ``preview`` describes a call before it runs.
    Set hints in ``annotations`` fill the definition's unset governance fields (effect type,
    idempotent, sequential, halting) when an agent takes the tool, whatever its origin.
    ``runs_last`` holds its calls until the rest of a parallel batch is done.
    """

    definition: ToolDefinition
    annotations: ToolAnnotations = ToolAnnotations()
    declared_tools: tuple[str, ...] = ()
    toolset_name: str | None = None
    runs_last: bool = False
    """Run after the other calls of a parallel batch, like a ``terminal`` tool, without ending
    the turn (a tool that must see its siblings' effects)."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.definition.name

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        """Return ``(converted input, None)`` or ``(None, error text)``.

        Args:
            arguments: the call's JSON arguments.
        """
        from dive.tools._schema import validate_against_schema

        errors = validate_against_schema(arguments, self.definition.input_schema)
        if errors:
            return None, f'Invalid arguments for tool "{self.name}": ' + "; ".join(errors)
        return arguments, None

    def preview(self, arguments: Mapping[str, Any]) -> ToolCallPreview | None:
        """A preview of the call, or None.

        Args:
            arguments: the call's JSON arguments.
        """
        return None

    @abc.abstractmethod
    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        """Run the tool on validated input.

        Args:
            input: what ``validate`` returned.
            ctx: the call's context (ids, deps, cancellation, output streaming).
        """


EMPTY_ARGS: Mapping[str, Any] = EMPTY
