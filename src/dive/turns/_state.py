"""``TurnState``: the state of one turn while it runs, changed only through its own methods.

It is made of small owners: the transcript (``transcript``: record, working set, system
prompt, queued reminders), the call ledger (``calls``: the only owner of call states), the
open tool group, and the counts (one frozen ``TurnCounters``); beside them usage, the
revision and the accepted resume results. The records it builds (``running_turn``,
``final_turn``, ``suspend``) are the only way a turn's state leaves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Final

from dive.llm import ModelResponse, ResponseAccumulator, Usage
from dive.messages import (
    JSONValue,
    Message,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from dive.turns._counters import TurnCounters
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
from dive.turns._transcript import Transcript

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
        counters: the counts the turn already has (a reopened or continued turn).
        revision: the session revision the turn was loaded at.
        created_at: when the turn began; None: now.
        accepted: results a resume already accepted, by call id.
        clock: gives the current time (the runner's clock) for what the turn adds.
    """

    __slots__ = (
        "_accepted",
        "_clock",
        "_counters",
        "_created_at",
        "_group",
        "_last_response",
        "_ledger",
        "_origin",
        "_prior_usage",
        "_revision",
        "_stream",
        "_turn_id",
        "_usage",
        "_usage_unknown",
        "calls",
        "transcript",
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
        counters: TurnCounters | None = None,
        revision: int = 0,
        created_at: datetime | None = None,
        accepted: Mapping[str, JSONValue] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._clock = clock
        self._turn_id = turn_id
        self._origin = origin
        self._created_at = created_at or clock()
        self.transcript: Final = Transcript(history, system_prompt, clock)
        """The turn's messages: record, working set, system prompt, queued reminders."""
        self._ledger = ledger or CallLedger()
        self.calls: Final[CallLedger] = self._ledger
        """The call ledger: the only owner of call states."""
        self._group: OpenGroup | None = None
        self._usage = Usage.ZERO
        self._prior_usage = prior_usage or Usage.ZERO
        self._usage_unknown = False
        self._counters = counters or TurnCounters()
        self._revision = revision
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
        counters = s.counters
        state = cls(
            turn_id=s.turn_id,
            origin=s.origin,
            history=history,
            system_prompt=system_prompt,
            ledger=CallLedger.restore(
                stored.tool_calls,
                suspension=s,
                executed=counters.executed_tool_calls,
                definition_of=definition_of,
            ),
            prior_usage=s.usage,
            counters=counters,
            revision=revision,
            created_at=stored.created_at,
            accepted=s.accepted,
            clock=clock,
        )
        prefix, calls, results = split_suspended(s.turn_messages)
        for m in prefix:
            state.transcript.add(m)
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

    def add_response(
        self, message: Message, definition_of: Callable[[str], ToolDefinition | None]
    ) -> tuple[ToolCall, ...]:
        """Record an assistant message and announce every call it makes; return the calls.

        Args:
            message: the model's assistant message.
            definition_of: finds a tool's definition by name (None for an unknown tool).
        """
        if message.content:
            self.transcript.add(message)
        calls = message.tool_calls
        for call in calls:
            self._ledger.announce(call, definition_of(call.name))
        return calls

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
                self.transcript.add(m)
        return group

    def take_group(self) -> OpenGroup | None:
        """Clear the open group without recording it (the ending records what is known)."""
        group, self._group = self._group, None
        return group

    # --- counters and usage --------------------------------------------------------------------

    @property
    def model_calls(self) -> int:
        """Model calls of the turn (pause resends excluded), across suspensions."""
        return self._counters.model_calls

    @property
    def iterations(self) -> int:
        """Every model call of the turn, pause resends included (``pre_iteration``'s count)."""
        return self._counters.iterations

    @property
    def counters(self) -> TurnCounters:
        """The turn's counts, one frozen value (the executed tool calls are the ledger's)."""
        return replace(self._counters, executed_tool_calls=self._ledger.executed)

    @property
    def budget_used(self) -> int:
        """Model calls counted against ``max_model_calls_per_turn`` (since a fresh budget)."""
        c = self._counters
        return c.model_calls - c.budget_start

    @property
    def position(self) -> tuple[int, int]:
        """``(revision, iterations)``: where the turn stands, in one read."""
        return self._revision, self._counters.iterations

    def count_iteration(self) -> None:
        """A model call was made."""
        c = self._counters
        self._counters = replace(c, iterations=c.iterations + 1)

    def count_model_call(self) -> None:
        """A model call that counts against the limit completed."""
        c = self._counters
        self._counters = replace(c, model_calls=c.model_calls + 1)

    def grant_fresh_budget(self) -> None:
        """A ``stop`` continuation: the model-call limit counts from here."""
        self._counters = self._counters.with_fresh_budget()

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
        messages = list(self.transcript.record)
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
            self.transcript.record_tuple(),
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
            outcome=outcome,
            suspension=suspension,
            finished_at=finished_at,
            **self.counters.fields(),
        )

    def suspend(self) -> SuspensionState:
        """Record the suspended group's results so far; return its ``SuspensionState``.

        The group stays open: its pending calls are what the suspension waits for.
        """
        group = self._group
        assert group is not None
        for m in group.result_messages():
            self.transcript.add(m)
        ledger = self._ledger
        pending = tuple(p for c in group.calls if (p := ledger.pending(c.id)) is not None)
        return SuspensionState(
            turn_id=self._turn_id,
            pending_tool_calls=pending,
            completed_tool_calls=tuple(c.id for c in group.calls if c.id in group.results),
            turn_messages=self.transcript.record_tuple(),
            batch_halted=group.halted,
            ending_calls=group.ending,
            usage=self.turn_usage,
            origin=self._origin,
            accepted=dict(self._accepted),
            context=dict(group.context),
            tool_calls=ledger.records(),
            **self.counters.fields(),
        )
