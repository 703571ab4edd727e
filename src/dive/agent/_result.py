"""``RunResult``: what every invocation that began returns.

After the turn boundary dive never raises for the turn's sake: ``status`` says where the turn
stands (``completed``, ``suspended`` or ``incomplete``), ``turn.outcome`` why it stopped and
what to do next. ``raise_for_status()`` converts an incomplete turn or a failed save into a
``TurnError`` for callers who prefer exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar, cast

from dive.agent._events import AgentEvent, ToolCallResultEvent
from dive.errors import OutputUnavailableError, TurnError
from dive.llm import Usage
from dive.messages import Message
from dive.messages.codec import JSONValue
from dive.turns import PendingToolCall, Persistence, Turn, TurnOutcome, TurnStatus

__all__ = ["RunResult", "answer_text"]

OutputT = TypeVar("OutputT")
DefaultT = TypeVar("DefaultT")


def answer_text(messages: Sequence[Message]) -> str:
    """The last run of assistant messages' text (notes after it skipped), by passage.

    Whitespace-only passages are skipped and the answer is stripped at both ends. A tool
    result or a user message (a reminder asking to try again) before the run ends it.
    """
    passages: list[str] = []
    started = False
    for m in reversed(messages):
        if m.role != "assistant":
            if started or m.role == "tool":
                break
            continue
        started = True
        if m.text.strip():
            passages.append(m.text)
    return "\n\n".join(reversed(passages)).strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult(Generic[OutputT]):
    """The result of one invocation.

    Attributes:
        status: ``completed``, ``suspended`` or ``incomplete``.
        turn: the turn's record (``turn.suspension.pending_tool_calls`` lists what a suspended turn
            waits for).
        usage: this invocation's usage.
        output_messages: the messages this turn added, as saved.
        error: what ended an incomplete turn, if an exception did.
        save_error: why saving the turn failed, if it did.
        stop_reason: the last response's raw stop reason.
        stop_details: the provider's extra stop information (a refusal's category, say).
        model: the model that answered.
        created_at: when the turn began.
        finished_at: when it ended.
        background_tasks: handles of calls still running in the background.
    """

    status: TurnStatus
    turn: Turn
    usage: Usage
    output_messages: tuple[Message, ...]
    history: tuple[Message, ...] = ()
    """The history before this turn, as the turn began (see ``all_messages()``)."""
    items: tuple[AgentEvent, ...] = ()
    """Every event of this invocation except ``turn_ended`` and raw ``model_event`` deltas
    (those are delivered to ``on_event`` / ``stream()`` consumers only)."""
    error: BaseException | None = None
    save_error: BaseException | None = None
    stop_reason: str | None = None
    stop_details: JSONValue = None
    model: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None
    raw_output: Any = None
    """The accepted output, untyped (None when there is none: see ``has_output``)."""
    has_output: bool = False
    """True when the turn produced its output (a completed turn always has one)."""
    background_tasks: tuple[Any, ...] = field(default=())

    @property
    def outcome(self) -> TurnOutcome | None:
        """How an incomplete turn ended (None otherwise)."""
        return self.turn.outcome

    @property
    def pending_tool_calls(self) -> tuple[PendingToolCall, ...]:
        """The calls a suspended turn waits for, in call order (empty on any other result).

        Each has the ``id`` to answer in ``run(tool_results={id: value})``, the tool's
        ``name`` and ``input``, the ``prompt`` and ``reason`` it suspended with
        (``approval_required`` for a call held at the approval gate) and its ``metadata``.
        A process that did not run the turn finds the same calls in the stored turn:
        ``(await session.load()).open_turn.suspension.pending_tool_calls``.
        """
        suspension = self.turn.suspension
        if self.status != "suspended" or suspension is None:
            return ()
        return suspension.pending_tool_calls

    @property
    def persistence(self) -> Persistence:
        """Whether the turn was saved: ``none``, ``saved``, ``failed`` or ``unknown``."""
        return self.turn.persistence

    @property
    def output(self) -> OutputT:
        """The turn's output, typed by the agent's ``output_type`` (the final text for ``str``).

        Raises ``OutputUnavailableError`` when the turn has none (it is suspended or
        incomplete); check ``status`` first, or use ``output_or(default)``.
        """
        if self.has_output:
            return cast(OutputT, self.raw_output)
        raise OutputUnavailableError(f"result.output is not available: the turn {self._why()}")

    def output_or(self, default: DefaultT) -> OutputT | DefaultT:
        """The output, or ``default`` when the turn has none.

        Args:
            default: what to return when the turn has no output.
        """
        return cast(OutputT, self.raw_output) if self.has_output else default

    def _why(self) -> str:
        if self.status == "suspended":
            return "is suspended waiting for tool results; resume it with tool_results="
        outcome = self.outcome
        if self.status == "incomplete" and outcome is not None:
            return f"ended incomplete ({outcome.reason}); next step: {outcome.next}"
        return f"ended {self.status} without an output"

    @property
    def output_text(self) -> str:
        """The final answer: the assistant text after the last tool result, by passage.

        Whitespace-only passages (stray blank-line text blocks models emit around thinking and
        server tools) are skipped, and the answer is stripped at both ends. A turn a terminal
        tool ended has no such text: its answer is that call's result (the ``str`` output).
        """
        text = answer_text(self.output_messages)
        if not text and self.has_output and isinstance(self.raw_output, str):
            return self.raw_output
        return text

    def tool_call_results(self) -> list[ToolCallResultEvent]:
        """Every ``tool_call_result`` event of this invocation, in order."""
        return [e for e in self.items if isinstance(e, ToolCallResultEvent)]

    @property
    def messages(self) -> Sequence[Message]:
        """The turn's saved messages (``turn.messages``)."""
        return self.turn.messages

    def new_messages(self) -> list[Message]:
        """The turn's messages: its input, the model's responses and the tool results.

        A new list on every call (the caller may change it). A resumed or continued turn
        includes the messages it recorded before it was suspended or stopped.
        """
        return list(self.turn.messages)

    def all_messages(self) -> list[Message]:
        """The whole conversation: the history before the turn, then the turn's messages.

        A new list on every call. Pass it as ``history=`` to the next stateless run, or save
        it with :func:`dive.messages.messages_to_json`. Messages a hook or extension showed
        the model only for this turn (reminders, unsaved ``session_start`` messages) are not
        part of it.
        """
        return [*self.history, *self.turn.messages]

    def __str__(self) -> str:
        """One line: status, reason, error and the next step, then the usage.

        E.g. ``completed (end_turn) · input 1,200 (uncached 200, cache write 0, cache read
        1,000) · output 350 · 2 requests · $0.0123``, ``incomplete (provider_error): could not
        connect to …: connection refused; next: continue · input …`` or ``suspended: 1 pending
        tool call; next: resume with tool_results · input …``; the usage part is
        ``str(result.usage)``.
        """
        if self.status == "completed":
            line = f"completed ({self.stop_reason})" if self.stop_reason else "completed"
        elif self.status == "suspended":
            suspension = self.turn.suspension
            count = len(suspension.pending_tool_calls) if suspension is not None else 0
            calls = "call" if count == 1 else "calls"
            line = f"suspended: {count} pending tool {calls}; next: resume with tool_results"
        else:
            outcome = self.outcome
            reason = outcome.reason if outcome is not None else "unknown"
            error = str(self.error) if self.error is not None else None
            if error is None and outcome is not None:
                error = outcome.error
            line = f"incomplete ({reason})"
            if error:
                line += f": {error}"
            if outcome is not None:
                line += f"; next: {outcome.next}"
        if self.save_error is not None:
            line += f"; not saved: {self.save_error}"
        return f"{' '.join(line.split())} · {self.usage}"

    def raise_for_status(self) -> None:
        """Raise ``TurnError`` if the turn is incomplete or an error/save error is set."""
        problem = self.error or self.save_error
        if self.status == "incomplete" or problem is not None:
            reason = self.outcome.reason if self.outcome is not None else self.status
            detail = f": {problem}" if problem is not None else ""
            raise TurnError(f"turn {self.turn.id} ended {reason}{detail}", self) from problem
