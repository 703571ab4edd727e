"""Closing stored turns without running them: crash recovery, forks and stored suspensions.

Every path settles call states through the call ledger's ``close`` transition, so a call
that may have started (``running``, or suspended by its own tool) becomes ``unknown`` and a
call that never began (held at the approval gate, or never launched) ``not_started``:

- ``recover_running_turn``: a turn found ``running`` on load (the process died) is closed
  ``process_exit``; the advice is ``reconcile`` unless every unknown call's tool is read-only
  (tools that cannot be resolved count as needing reconciliation).
- ``close_for_fork``: a fork's copy of an open turn; incomplete turns are copied as they
  are, suspended and running ones are closed ``canceled``.
- ``split_suspended``: the record and open tool group of a suspended turn, for resume and
  ``cancel_suspended_turn``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from dive.errors import InvalidRunError
from dive.messages import Message, ToolCall, ToolResult
from dive.turns._close import advise, close_turn, open_group_calls
from dive.turns._ledger import CallLedger
from dive.turns._records import (
    IncompleteReason,
    SuspensionState,
    ToolCallRecord,
    Turn,
    TurnOutcome,
)

__all__ = [
    "close_for_fork",
    "close_stored_turn",
    "recover_running_turn",
    "split_suspended",
    "suspended_records",
    "turn_from_suspension",
]


def _judge(
    records: tuple[ToolCallRecord, ...], read_only: Callable[[str], bool] | None
) -> tuple[ToolCallRecord, ...]:
    """Re-derive ``reconcile`` of unknown calls: read-only now, or recorded read-only.

    A tool that does not resolve at load (a toolset's, a declarer's) is judged by the effect
    its record stored when the call started; one with no stored effect needs reconciling.
    """
    if read_only is None:
        return records
    return tuple(
        replace(r, reconcile=not (read_only(r.name) or r.effect == "read_only"))
        if r.state == "unknown"
        else r
        for r in records
    )


def close_stored_turn(
    turn: Turn,
    reason: IncompleteReason,
    read_only: Callable[[str], bool] | None = None,
    *,
    error: str | None = None,
    at: datetime | None = None,
) -> Turn:
    """Close a stored open turn as incomplete ``reason`` without running anything.

    Args:
        turn: the stored open turn (running, suspended or incomplete).
        reason: the incomplete reason to record.
        read_only: says whether a tool, by name, is read-only (an ``unknown`` call of a read-only
            tool needs no reconciling); None trusts each record's stored effect type.
        error: the outcome's error text.
        at: when it is closed (default: now).
    """
    at = at or datetime.now(UTC)
    suspension = turn.suspension
    records = turn.tool_calls or (suspended_records(suspension) if suspension else ())
    ledger = CallLedger.restore(
        records, suspension=suspension, executed=turn.counters.executed_tool_calls
    )
    ledger.close([r.id for r in records])
    in_flight_ids = [c.id for c in open_group_calls(turn.messages) if c.id in ledger]
    all_records = _judge(ledger.records(), read_only)
    by_id = {r.id: r for r in all_records}
    in_flight = tuple(by_id[i] for i in in_flight_ids)
    outcome = TurnOutcome(
        reason=reason,
        next=advise(reason, in_flight),
        error=error,
        usage_unknown=turn.outcome.usage_unknown if turn.outcome else False,
        tool_calls=in_flight,
    )
    messages = close_turn(list(turn.messages), outcome, at=at)
    return replace(
        turn,
        status="incomplete",
        messages=tuple(messages),
        tool_calls=all_records,
        outcome=outcome,
        suspension=None,
        finished_at=at,
    )


def recover_running_turn(
    turn: Turn, read_only: Callable[[str], bool] | None = None, *, at: datetime | None = None
) -> Turn:
    """Close a turn the process left ``running`` as ``process_exit``.

    Args:
        turn: the stored ``running`` turn.
        read_only: says whether a tool, by name, is read-only; None trusts the stored effect type.
        at: when it is closed (default: now).
    """
    return close_stored_turn(
        turn, "process_exit", read_only, error="the process running this turn exited", at=at
    )


def close_for_fork(turn: Turn) -> Turn:
    """A fork's copy of an open turn: incomplete as is; suspended or running closed canceled.

    Args:
        turn: the open turn being copied.
    """
    if turn.status == "incomplete":
        return turn
    return close_stored_turn(turn, "canceled", error="closed by a fork")


def suspended_records(state: SuspensionState) -> tuple[ToolCallRecord, ...]:
    """Call records of a suspension (derived from its group when it carries none).

    Args:
        state: a suspension.
    """
    if state.tool_calls:
        return state.tool_calls
    calls = _group_calls(state.turn_messages)
    done = set(state.completed_tool_calls)
    pending = {p.id for p in state.pending_tool_calls}
    return tuple(
        ToolCallRecord(
            id=c.id,
            name=c.name,
            state="completed" if c.id in done else "waiting" if c.id in pending else "not_started",
        )
        for c in calls
    )


def _group_calls(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    for m in reversed(messages):
        if m.role == "assistant" and m.tool_calls:
            return m.tool_calls
    raise InvalidRunError("the suspension state has no tool-call message to resume")


def split_suspended(
    messages: Sequence[Message],
) -> tuple[list[Message], tuple[ToolCall, ...], dict[str, ToolResult]]:
    """The messages up to the suspended group's call message, its calls and its results.

    Args:
        messages: a suspended turn's messages.
    """
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            results = {
                r.tool_call_id: r for x in messages[i + 1 :] if (r := x.tool_result) is not None
            }
            return list(messages[: i + 1]), m.tool_calls, results
    raise InvalidRunError("the suspension state has no tool-call message to resume")


def turn_from_suspension(state: SuspensionState) -> Turn:
    """The suspended ``Turn`` a stateless ``SuspensionState`` stands for.

    Args:
        state: the suspension a stateless caller kept.
    """
    return Turn(
        id=state.turn_id,
        status="suspended",
        origin=state.origin,
        messages=state.turn_messages,
        tool_calls=suspended_records(state),
        usage=state.usage,
        suspension=state,
        **state.counters.fields(),
    )
