"""``ToolContext``: what a running tool can see and do.

``turn_id`` and ``tool_call_id`` together are the idempotency key for side effects: both are
stable across resume and crash recovery. Output and progress go to the event stream while the
call's batch is open; events emitted after it closed are dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal

from typing_extensions import TypeVar

from dive.llm import Usage
from dive.messages import JSONValue
from dive.messages.codec import EMPTY, empty
from dive.tools._events import ToolProgressEvent, ToolStreamEvent

if TYPE_CHECKING:
    from dive.turns import CancelToken

__all__ = ["ResumedCall", "ToolContext"]

Emit = Callable[[Any], Awaitable[None]]
OnUsage = Callable[[Usage], None]

DepsT = TypeVar("DepsT", default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumedCall:
    """The answer a call that suspended with ``Suspend(..., call_again=True)`` is resumed with.

    Attributes:
        answer: the value supplied on resume, as JSON.
        prompt: the prompt the call suspended with.
        reason: the reason it suspended with.
        metadata: the metadata it suspended with (what the tool needs to go on).
    """

    answer: JSONValue
    prompt: str = ""
    reason: Literal["input_required", "auth_required", "approval_required"] = "input_required"
    metadata: Mapping[str, JSONValue] = field(default_factory=empty)


class ToolContext(Generic[DepsT]):
    """Passed to tools that declare a ``ctx`` parameter (excluded from the schema).

    Annotate it with the agent's dependency type to get ``ctx.deps`` typed:
    ``async def lookup(ctx: ToolContext[MyDeps], id: str) -> str``.

    Attributes:
        deps: what the run was given as ``deps=`` (typed by ``Agent(deps_type=...)``).
        values: shared untyped values of the invocation (``run(values=...)``).
        tool_call_id: the model's id of this call.
        tool_name: the tool's name as the model called it.
        turn_id: the running turn's id (with ``tool_call_id``, an idempotency key).
        session_id: the run's session id, or None when stateless.
        agent_name: the running agent's name, if it has one.
        agent: the running agent (for tools that start agents of their own: subagents).
        attempt: the attempt number (retries of idempotent tools start again at 1).
        resumed: set when the tool is called again on resume (``Suspend(call_again=True)``):
            the answer and what the call suspended with; None on a first call.
        cancel: the run's cancel token (``cancel_token``).
        emit: delivers the tool's stream and progress events to the run; None drops them.
        on_usage: receives usage the tool reports (``report_usage``); None ignores it.
    """

    __slots__ = (
        "_cancel",
        "_emit",
        "_on_usage",
        "agent",
        "agent_name",
        "attempt",
        "closed",
        "deps",
        "resumed",
        "session_id",
        "tool_call_id",
        "tool_name",
        "turn_id",
        "values",
    )

    def __init__(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        turn_id: str,
        values: dict[str, Any] | None = None,
        session_id: str | None = None,
        agent_name: str | None = None,
        cancel: CancelToken | None = None,
        emit: Emit | None = None,
        deps: Any = None,
        agent: Any = None,
        on_usage: OnUsage | None = None,
        resumed: ResumedCall | None = None,
    ) -> None:
        self.deps: DepsT = deps
        self.agent: Any = agent
        self.resumed = resumed
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.turn_id = turn_id
        self.values: dict[str, Any] = values if values is not None else {}
        self.session_id = session_id
        self.agent_name = agent_name
        self.attempt = 1
        self.closed = False
        self._cancel = cancel
        self._emit = emit
        self._on_usage = on_usage

    @property
    def idempotency_key(self) -> str:
        """``"<turn_id>:<tool_call_id>"``: stable across resume and recovery."""
        return f"{self.turn_id}:{self.tool_call_id}"

    @property
    def cancel_token(self) -> CancelToken | None:
        """The run's cancel token (a child run's ``CancelToken(parent=...)`` follows it)."""
        return self._cancel

    def report_usage(self, usage: Usage) -> None:
        """Charge model usage this tool spent (a subagent's, say) to the running turn.

        It joins the turn's usage (and its usage limits) like a model call's. Reported after
        the call moved to the background (``Background``), it goes with the late result to
        the turn that receives it.

        Args:
            usage: the usage to charge.
        """
        if self._on_usage is not None:
            self._on_usage(usage)

    @property
    def soft_cancel_requested(self) -> bool:
        """True once the run was asked to stop at the next step boundary."""
        return self._cancel is not None and self._cancel.soft_cancel_requested

    async def stream_output(self, text: str) -> None:
        """Append text to this call's output stream (a ``tool_stream`` event).

        Args:
            text: the text to append.
        """
        if self._emit is None or self.closed:
            return
        await self._emit(ToolStreamEvent(tool_call_id=self.tool_call_id, text=text))

    async def report_progress(
        self, display: str, metadata: Mapping[str, JSONValue] | None = None
    ) -> None:
        """Report progress (a ``tool_progress`` event; the latest wins).

        Args:
            display: a short progress text for people.
            metadata: JSON for programs (a percentage, counts, ...).
        """
        if self._emit is None or self.closed:
            return
        await self._emit(
            ToolProgressEvent(
                tool_call_id=self.tool_call_id, display=display, metadata=metadata or EMPTY
            )
        )
