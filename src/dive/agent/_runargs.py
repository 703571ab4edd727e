"""The options of one run, packed once.

``RunArgs`` for ``run`` / ``run_sync``, ``StreamArgs`` for ``stream`` (the same but the
handlers: the stream is the handler).

``Agent.run(input, **args)`` takes them as keywords (``Unpack[RunArgs]``: a misspelt one is a
type error, and at run time a ``TypeError`` as for any unknown keyword); :func:`run_options`
checks and normalises them into the one ``RunOptions`` the loop reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic

from typing_extensions import TypedDict, TypeVar

from dive.agent._arguments import UserInput, input_messages
from dive.agent._background import BackgroundResult
from dive.agent._begin import RunOptions, check_arguments
from dive.agent._runner import IN_PROCESS, Runner
from dive.agent._sink import EventHandler
from dive.agent._text import TextHandler, with_text_handler
from dive.errors import InvalidRunError
from dive.llm import ModelSettings
from dive.messages import Message
from dive.sessions import Session
from dive.turns import CancelToken, Reminder, SuspensionState

__all__ = ["DEFAULT", "DefaultSession", "RunArgs", "StreamArgs", "run_options"]

DepsT = TypeVar("DepsT", default=None)


class DefaultSession:
    """Marker for "use the agent's default session"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = DefaultSession()
"""``session=DEFAULT`` (the default): the agent's own session."""


class StreamArgs(TypedDict, Generic[DepsT], total=False):
    """The keyword arguments of ``Agent.stream`` (and, with the handlers, of ``run``).

    Attributes:
        history: the pre-turn history of a stateless run (``result.all_messages()``).
        session: the session (the agent's by default; ``None`` forces stateless).
        turn_id: the new turn's id (generated when omitted).
        expected_revision: refuse to start unless the session is at this revision.
        continue_turn: call the model on the history as it stands.
        tool_results: results (or ``ToolApproval``) for a suspended turn's calls.
        suspension: the ``SuspensionState`` of a stateless resume.
        background_results: late results of calls whose turn ended.
        reminders: ``<system-reminder>`` notes for the model.
        cancel: a ``CancelToken`` for soft and hard cancellation.
        deps: the run's dependencies, ``ctx.deps`` in tools, hooks, instructions and output
            validators; required when the agent has a ``deps_type``.
        values: untyped shared values (``ctx.values``), mutable by tools and hooks.
        prompt_cache_key: the provider prompt-cache key (stable per session otherwise).
        model_settings: settings merged over the agent's for this run.
        runner: where the turn's effects happen (model and tool calls, store reads and
            writes, clock, ids, sleeps); default the in-process ``InProcessRunner``.
    """

    history: Sequence[Message] | None
    session: Session | DefaultSession | None
    turn_id: str | None
    expected_revision: int | None
    continue_turn: bool
    tool_results: Mapping[str, Any] | None
    suspension: SuspensionState | None
    background_results: Sequence[BackgroundResult]
    reminders: Sequence[Reminder]
    cancel: CancelToken | None
    deps: DepsT | None
    values: Mapping[str, Any] | None
    prompt_cache_key: str | None
    model_settings: ModelSettings | None
    runner: Runner | None


class RunArgs(StreamArgs[DepsT], total=False):
    """The keyword arguments of ``Agent.run`` and ``Agent.run_sync``.

    ``StreamArgs`` plus the handlers.

    Attributes:
        on_event: called with every event (sync or async).
        on_text: called with the answer's text as it arrives (each streamed delta, or each
            message's text when the model does not stream).
    """

    on_event: EventHandler | None
    on_text: TextHandler | None


_NAMES = frozenset(RunArgs.__optional_keys__)


def run_options(
    input: UserInput | None, args: Mapping[str, Any], agent_session: Session | None
) -> tuple[RunOptions, Session | None]:
    """Check ``args`` (as ``run`` received them) and pack them; returns the session too."""
    unknown = args.keys() - _NAMES
    if unknown:
        raise TypeError(f"run() got an unexpected keyword argument {min(unknown)!r}")
    session = args.get("session", DEFAULT)
    chosen = agent_session if isinstance(session, DefaultSession) else session
    on_event: EventHandler | None = args.get("on_event")
    on_text: TextHandler | None = args.get("on_text")
    if on_text is not None:
        on_event = with_text_handler(on_event, on_text)
    background: Sequence[BackgroundResult] = args.get("background_results", ())
    reminders: Sequence[Reminder] = args.get("reminders", ())
    continue_turn: bool = args.get("continue_turn", False)
    tool_results: Mapping[str, Any] | None = args.get("tool_results")
    check_arguments(
        input=input,
        history=args.get("history"),
        session=chosen,
        continue_turn=continue_turn,
        background_results=background,
        tool_results=tool_results,
        suspension=args.get("suspension"),
    )
    for r in reminders:
        if not isinstance(r, Reminder):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRunError("reminders must be Reminder objects")
    runner: Runner = args.get("runner") or IN_PROCESS
    options = RunOptions(
        new=input_messages(input, runner.now()) if input is not None else [],
        history=args.get("history"),
        continue_turn=continue_turn,
        background_results=tuple(background),
        reminders=tuple(reminders),
        on_event=on_event,
        cancel=args.get("cancel"),
        values=dict(args.get("values") or {}),
        deps=args.get("deps"),
        prompt_cache_key=args.get("prompt_cache_key"),
        model_settings=args.get("model_settings"),
        turn_id=args.get("turn_id"),
        expected_revision=args.get("expected_revision"),
        tool_results=tool_results,
        suspension=args.get("suspension"),
        runner=runner,
    )
    return options, chosen
