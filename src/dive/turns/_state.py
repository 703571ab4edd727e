"""``TurnState``: the state of one turn while it runs, changed only through its own methods.

It owns the output record (full fidelity: what is saved), the model-facing working set (what
hooks may rewrite), the tool group in flight, the call ledger, counters, usage and queued
reminders. Every message the turn adds goes through :meth:`TurnState.add`, so record and
working set never drift apart; the records it builds (``running_turn``, ``final_turn``,
``suspension_state``) are the only way a turn's state leaves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from dive.llm import ModelResponse, ResponseAccumulator, Usage
from dive.messages import (
    JSONValue,
    Message,
    ServerToolCall,
    ServerToolResult,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from dive.turns._group import OpenGroup
from dive.turns._ledger import CallLedger, Transition
from dive.turns._records import (
    SuspensionState,
    Turn,
    TurnOrigin,
    TurnOutcome,
    TurnStatus,
)
from dive.turns._recover import split_suspended
from dive.turns._reminders import Reminder, reminder_message

__all__ = ["TurnState"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class TurnState:
    """The state of one turn; see the module docstring.

    Args:
        turn_id: the turn's id.
        origin: what started the turn.
        history: the messages before the turn (the working set starts as a copy).
        system_prompt: the rendered system prompt.
        ledger: the call ledger of a reopened turn; None: a new, empty one.
        prior_usage: usage of the turn before this invocation (a resumed or continued turn).
        model_calls: model calls the turn already made.
        iterations: loop iterations the turn already ran.
        budget_start: the ``model_calls`` count at which the current budget began.
        revision: the session revision the turn was loaded at.
        created_at: when the turn began; None: now.
        accepted: results a resume already accepted, by call id.
        clock: gives the current time (the runner's clock) for what the turn adds.
    """

    __slots__ = (
        "_accepted",
        "_budget_start",
        "_clock",
        "_created_at",
        "_group",
        "_has_output",
        "_history",
        "_iterations",
        "_last_response",
        "_ledger",
        "_model_calls",
        "_model_only",
        "_origin",
        "_output",
        "_output_failures",
        "_prior_usage",
        "_queued",
        "_record",
        "_rendered_prompt",
        "_revision",
        "_stream",
        "_system_prompt",
        "_turn_id",
        "_usage",
        "_usage_unknown",
        "_working",
        "calls",
    )

    def __init__(
        self,
        *,
        turn_id: str,
        origin: TurnOrigin,
        history: Sequence[Message],
        system_prompt: str,
        ledger: CallLedger | None = None,
        prior_usage: Usage | None = None,
        model_calls: int = 0,
        iterations: int = 0,
        budget_start: int = 0,
        revision: int = 0,
        created_at: datetime | None = None,
        accepted: Mapping[str, JSONValue] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._clock = clock
        self._turn_id = turn_id
        self._origin = origin
        self._created_at = created_at or clock()
        self._system_prompt = system_prompt
        self._rendered_prompt = system_prompt
        self._record: list[Message] = []
        self._working: list[Message] = list(history)
        self._model_only: list[Message] = []
        self._history = tuple(history)
        self._ledger = ledger or CallLedger()
        self.calls: Final[CallLedger] = self._ledger
        """The call ledger: the only owner of call states."""
        self._group: OpenGroup | None = None
        self._usage = Usage.ZERO
        self._prior_usage = prior_usage or Usage.ZERO
        self._usage_unknown = False
        self._model_calls = model_calls
        self._iterations = max(iterations, model_calls)
        self._budget_start = budget_start
        self._revision = revision
        self._queued: list[tuple[Reminder, bool]] = []
        self._output: Any = None
        self._has_output = False
        self._output_failures = 0
        self._last_response: ModelResponse | None = None
        self._stream: ResponseAccumulator | None = None
        self._accepted: dict[str, JSONValue] = dict(accepted or {})

    @classmethod
    def reopen(
        cls,
        stored: Turn,
        *,
        history: Sequence[Message],
        system_prompt: str,
        revision: int,
        definition_of: Callable[[str], ToolDefinition | None] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> TurnState:
        """The state of a stored suspended turn: its record, and the suspended group reopened.

        Args:
            stored: the stored suspended turn.
            history: the messages before the turn.
            system_prompt: the rendered system prompt.
            revision: the session revision the turn was loaded at.
            definition_of: finds a tool's definition by name (refreshes the records' governance
                fields); None keeps the stored ones.
            clock: gives the current time (the runner's clock) for what the turn adds.
        """
        s = stored.suspension
        if s is None:
            raise ValueError(f"turn {stored.id} is not suspended")
        state = cls(
            turn_id=s.turn_id,
            origin=s.origin,
            history=history,
            system_prompt=system_prompt,
            ledger=CallLedger.restore(
                stored.tool_calls,
                suspension=s,
                executed=s.executed_tool_calls,
                definition_of=definition_of,
            ),
            prior_usage=s.usage,
            model_calls=s.model_calls,
            iterations=s.iterations,
            budget_start=s.budget_start,
            revision=revision,
            created_at=stored.created_at,
            accepted=s.accepted,
            clock=clock,
        )
        prefix, calls, results = split_suspended(s.turn_messages)
        for m in prefix:
            state.add(m)
        state.open_group(
            OpenGroup(
                calls,
                results=results,
                context=s.context,
                halted=s.batch_halted,
                ending=s.ending_calls,
            )
        )
        return state

    @property
    def turn_id(self) -> str:
        """The turn's id (stable across resume and continue)."""
        return self._turn_id

    @property
    def origin(self) -> TurnOrigin:
        """What started the turn."""
        return self._origin

    @property
    def created_at(self) -> datetime:
        """When the turn began."""
        return self._created_at

    def now(self) -> datetime:
        """The turn's clock (the runner's): timestamps of what the turn adds."""
        return self._clock()

    # --- messages -----------------------------------------------------------------------------

    @property
    def history(self) -> tuple[Message, ...]:
        """The history before the turn, as the turn began (what ``RunResult`` reports)."""
        return self._history

    @property
    def record(self) -> Sequence[Message]:
        """The turn's messages as recorded (what is saved)."""
        return self._record

    @property
    def working(self) -> Sequence[Message]:
        """What the model is sent: history, the record and model-only messages."""
        return self._working

    @property
    def system_prompt(self) -> str:
        """The system prompt of the next model call."""
        return self._system_prompt

    def set_system_prompt(self, text: str) -> None:
        """Replace the system prompt (``pre_generation`` / ``pre_iteration`` hooks).

        Args:
            text: the new system prompt.
        """
        self._system_prompt = text

    def render_system_prompt(self, prompt: str) -> None:
        """Apply a freshly rendered prompt (dynamic instructions, before a model call).

        Unchanged text changes nothing (the cache prefix holds). When hooks edited the
        prompt around the previous rendering, only that rendering is replaced; when they
        rewrote it entirely, their text stays.

        Args:
            prompt: the instructions as just rendered.
        """
        last = self._rendered_prompt
        if prompt == last:
            return
        if self._system_prompt == last:
            self._system_prompt = prompt
        elif last and last in self._system_prompt:
            self._system_prompt = self._system_prompt.replace(last, prompt, 1)
        self._rendered_prompt = prompt

    def add(self, message: Message) -> None:
        """Append a message to the record and the working set.

        Args:
            message: the message to append.
        """
        self._record.append(message)
        self._working.append(message)

    def add_model_only(self, message: Message) -> None:
        """Append a message the model sees during this invocation but that is not saved.

        Args:
            message: the message to show the model.
        """
        self._model_only.append(message)
        self._working.append(message)

    def seed(self, messages: Sequence[Message], *, persist: bool) -> None:
        """``session_start`` messages: recorded with the turn, or for the model only.

        Args:
            messages: what the ``session_start`` hook returned.
            persist: record them with the turn (True) or show them to the model only.
        """
        for m in messages:
            if persist:
                self.add(m)
            else:
                self._working.append(m)

    def replace_working(self, messages: Sequence[Message]) -> None:
        """Replace the model-facing working set (a hook's rewrite; the record is kept).

        Args:
            messages: the new working set; it must be a valid history.
        """
        self._working = list(messages)

    def reappend_model_only(self) -> None:
        """Re-append this invocation's model-only messages at the tail (after a ``stop``)."""
        self._working.extend(self._model_only)

    def add_response(
        self, message: Message, definition_of: Callable[[str], ToolDefinition | None]
    ) -> tuple[ToolCall, ...]:
        """Record an assistant message and announce every call it makes; return the calls.

        Args:
            message: the model's assistant message.
            definition_of: finds a tool's definition by name (None for an unknown tool).
        """
        if message.content:
            self.add(message)
        calls = message.tool_calls
        for call in calls:
            self._ledger.announce(call, definition_of(call.name))
        return calls

    def drop_unanswered_server_calls(self) -> None:
        """After giving up on a pause: drop the paused messages' unanswered server calls."""
        start = len(self._record)
        while start > 0 and self._record[start - 1].role == "assistant":
            start -= 1
        tail = self._record[start:]
        answered = {
            b.tool_use_id for m in tail for b in m.content if isinstance(b, ServerToolResult)
        }
        rebuilt: list[Message] = []
        for m in tail:
            kept = tuple(
                b for b in m.content if not (isinstance(b, ServerToolCall) and b.id not in answered)
            )
            if kept:
                rebuilt.append(m if kept == m.content else replace(m, content=kept))
        if [id(m) for m in rebuilt] == [id(m) for m in tail]:
            return
        del self._record[start:]
        self._working = [m for m in self._working if not any(m is t for t in tail)]
        for m in rebuilt:
            self.add(m)

    def close_record(self, messages: Sequence[Message]) -> None:
        """Replace the record with its closed form (the ending only).

        Args:
            messages: the closed messages (every call answered, the outcome note last).
        """
        self._record = list(messages)

    # --- the tool group in flight ------------------------------------------------------------

    @property
    def group(self) -> OpenGroup | None:
        """The tool group in flight, if any."""
        return self._group

    def open_group(self, group: OpenGroup) -> None:
        """Start running the calls of a response (or resume a suspended group).

        Args:
            group: the calls to run, with any results already recorded.
        """
        self._group = group

    def settle(
        self,
        call_id: str,
        result: ToolResult,
        how: Transition,
        *,
        error: str | None = None,
        halt: bool = False,
        end: bool = False,
    ) -> None:
        """Answer a call of the open group: its result and its state, written together.

        Args:
            call_id: the call answered.
            result: its result.
            how: the ledger transition (``finish``, ``time_out``, ``reject``, ``supply``).
            error: the call's error text, kept on its record.
            halt: a halting call failed, so the group's later halting calls do not run.
            end: the call's success ends the turn once the group is done.
        """
        group = self._group
        assert group is not None, "no tool group is open"
        group.add_result(call_id, result)
        self._ledger.apply(call_id, how, error=error)
        if halt:
            group.halt()
        if end:
            group.end_with(call_id)

    def group_context(self, call_id: str, text: str) -> None:
        """Add hook context for a call (joined to earlier context with a newline).

        Args:
            call_id: the call the context follows.
            text: the hook's ``additional_context``.
        """
        assert self._group is not None
        self._group.add_context(call_id, text)

    def close_group(self) -> OpenGroup | None:
        """Record the open group's results (call order, context after) and clear it."""
        group, self._group = self._group, None
        if group is not None:
            for m in group.messages():
                self.add(m)
        return group

    def take_group(self) -> OpenGroup | None:
        """Clear the open group without recording it (the ending records what is known)."""
        group, self._group = self._group, None
        return group

    # --- counters and usage --------------------------------------------------------------------

    @property
    def model_calls(self) -> int:
        """Model calls of the turn (pause resends excluded), across suspensions."""
        return self._model_calls

    @property
    def iterations(self) -> int:
        """Every model call of the turn, pause resends included (``pre_iteration``'s count)."""
        return self._iterations

    @property
    def budget_used(self) -> int:
        """Model calls counted against ``max_model_calls_per_turn`` (since a fresh budget)."""
        return self._model_calls - self._budget_start

    @property
    def position(self) -> tuple[int, int]:
        """``(revision, iterations)``: where the turn stands, in one read."""
        return self._revision, self._iterations

    def count_iteration(self) -> None:
        """A model call was made."""
        self._iterations += 1

    def count_model_call(self) -> None:
        """A model call that counts against the limit completed."""
        self._model_calls += 1

    def grant_fresh_budget(self) -> None:
        """A ``stop`` continuation: the model-call limit counts from here."""
        self._budget_start = self._model_calls

    @property
    def usage(self) -> Usage:
        """Usage of this invocation."""
        return self._usage

    @property
    def turn_usage(self) -> Usage:
        """Usage of the whole turn (earlier parts of a resumed or folded turn included)."""
        return self._prior_usage + self._usage

    @property
    def usage_unknown(self) -> bool:
        """True once a model call's usage was not reported."""
        return self._usage_unknown

    def add_usage(self, usage: Usage) -> None:
        """Add one model call's usage.

        Args:
            usage: the call's usage.
        """
        self._usage = self._usage + usage
        if not usage.known:
            self._usage_unknown = True

    @property
    def last_response(self) -> ModelResponse | None:
        """The last model response of this invocation."""
        return self._last_response

    def stream_started(self, accumulator: ResponseAccumulator) -> None:
        """A model call began; its accumulator holds what has arrived.

        Args:
            accumulator: collects the call's stream events.
        """
        self._stream = accumulator

    def response_arrived(self, response: ModelResponse) -> None:
        """The model call finished with ``response``.

        Args:
            response: the finished response.
        """
        self._stream = None
        self._last_response = response

    def take_partial_stream(self) -> ResponseAccumulator | None:
        """The accumulator of an interrupted model call, once."""
        acc, self._stream = self._stream, None
        return acc

    # --- structured output ---------------------------------------------------------------------

    @property
    def output(self) -> Any:
        """The accepted structured output, if any."""
        return self._output

    @property
    def has_output(self) -> bool:
        """True once an output was accepted (it may itself be None, 0 or False)."""
        return self._has_output

    @property
    def output_failures(self) -> int:
        """Failed output attempts so far."""
        return self._output_failures

    def set_output(self, value: Any) -> None:
        """Accept the output.

        Args:
            value: the validated output (``result.output``).
        """
        self._output = value
        self._has_output = True

    def count_output_failure(self) -> int:
        """Count a failed structured-output attempt; returns the count."""
        self._output_failures += 1
        return self._output_failures

    # --- reminders -----------------------------------------------------------------------------

    def queue_reminders(self, items: Sequence[tuple[Reminder, bool]]) -> None:
        """Queue reminders (``recorded`` flag) for the next iteration boundary.

        Args:
            items: each reminder with its ``recorded`` flag (True: saved with the turn; False: shown
                to the model only).
        """
        self._queued.extend(items)

    def flush_reminders(self) -> None:
        """Deliver queued reminders at an iteration boundary."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        at = self._clock()
        for reminder, recorded in queued:
            msg = reminder_message(reminder, at=at)
            if recorded:
                self.add(msg)
            else:
                self.add_model_only(msg)

    def take_recorded_reminders(self) -> list[Message]:
        """Queued recorded reminders as messages (model-only ones are dropped)."""
        queued, self._queued = self._queued, []
        if not queued:
            return []
        at = self._clock()
        return [reminder_message(r, at=at) for r, recorded in queued if recorded]

    # --- persistence ---------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The session revision the next write expects."""
        return self._revision

    def saved(self, revision: int) -> None:
        """A write landed at ``revision``.

        Args:
            revision: the session revision the write produced.
        """
        self._revision = revision

    @property
    def accepted(self) -> Mapping[str, JSONValue]:
        """Resume results accepted so far, as JSON (idempotent re-submission)."""
        return self._accepted

    def accept(self, accepted: Mapping[str, JSONValue]) -> None:
        """Remember the results a resume accepted.

        Args:
            accepted: the accepted results by call id (JSON).
        """
        self._accepted = dict(accepted)

    # --- records -------------------------------------------------------------------------------

    def running_turn(self) -> Turn:
        """The ``running`` record as it stands (results of the group in flight included)."""
        messages = list(self._record)
        if self._group is not None:
            messages.extend(self._group.messages())
        return self._turn("running", tuple(messages))

    def final_turn(
        self,
        status: TurnStatus,
        *,
        outcome: TurnOutcome | None = None,
        suspension: SuspensionState | None = None,
    ) -> Turn:
        """The record of the turn as it ends.

        Args:
            status: the turn's final status.
            outcome: how it ended (incomplete turns).
            suspension: what resuming needs (suspended turns).
        """
        return self._turn(
            status,
            tuple(self._record),
            outcome=outcome,
            suspension=suspension,
            finished_at=self._clock(),
        )

    def _turn(
        self,
        status: TurnStatus,
        messages: tuple[Message, ...],
        *,
        outcome: TurnOutcome | None = None,
        suspension: SuspensionState | None = None,
        finished_at: datetime | None = None,
    ) -> Turn:
        return Turn(
            id=self._turn_id,
            status=status,
            origin=self._origin,
            messages=messages,
            tool_calls=self._ledger.records(),
            usage=self.turn_usage,
            created_at=self._created_at,
            model_calls=self._model_calls,
            executed_tool_calls=self._ledger.executed,
            iterations=self._iterations,
            budget_start=self._budget_start,
            outcome=outcome,
            suspension=suspension,
            finished_at=finished_at,
        )

    def suspend(self) -> SuspensionState:
        """Record the suspended group's results so far; return its ``SuspensionState``.

        The group stays open: its pending calls are what the suspension waits for.
        """
        group = self._group
        assert group is not None
        for m in group.result_messages():
            self.add(m)
        ledger = self._ledger
        pending = tuple(p for c in group.calls if (p := ledger.pending(c.id)) is not None)
        return SuspensionState(
            turn_id=self._turn_id,
            pending_tool_calls=pending,
            completed_tool_calls=tuple(c.id for c in group.calls if c.id in group.results),
            turn_messages=tuple(self._record),
            batch_halted=group.halted,
            ending_calls=group.ending,
            usage=self.turn_usage,
            origin=self._origin,
            accepted=dict(self._accepted),
            context=dict(group.context),
            model_calls=self._model_calls,
            executed_tool_calls=ledger.executed,
            iterations=self._iterations,
            budget_start=self._budget_start,
            tool_calls=ledger.records(),
        )
