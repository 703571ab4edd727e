"""Closing stored turns without running them: crash recovery and forks.

``recover_running_turn`` closes a turn found ``running`` on load (the process died): running
calls become ``unknown``, unstarted ones "Not run", the outcome is ``process_exit`` and the
advice ``reconcile`` unless every unknown call's tool is read-only (tools that cannot be
resolved count as needing reconciliation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from dive.agent._close import advise, close_turn
from dive.agent._records import CallState, IncompleteReason, ToolCallRecord, Turn, TurnOutcome

__all__ = ["close_for_fork", "close_stored_turn", "recover_running_turn"]


def _settle(
    calls: tuple[ToolCallRecord, ...], read_only: Callable[[str], bool]
) -> tuple[ToolCallRecord, ...]:
    out: list[ToolCallRecord] = []
    for c in calls:
        state: CallState = c.state
        if state == "running":
            state = "unknown"
        elif state == "waiting":
            state = "not_started"
        out.append(replace(c, state=state, reconcile=state == "unknown" and not read_only(c.name)))
    return tuple(out)


def close_stored_turn(
    turn: Turn,
    reason: IncompleteReason,
    read_only: Callable[[str], bool],
    *,
    error: str | None = None,
) -> Turn:
    """Close a stored open turn as incomplete ``reason`` without running anything."""
    calls = _settle(turn.tool_calls, read_only)
    open_ids = {c.id for c in calls if c.state != "completed"}
    in_flight = tuple(c for c in calls if c.id in open_ids) or ()
    outcome = TurnOutcome(
        reason=reason,
        next=advise(reason, calls, read_only),
        error=error,
        usage_unknown=turn.outcome.usage_unknown if turn.outcome else False,
        tool_calls=in_flight,
    )
    messages = close_turn(list(turn.messages), outcome)
    return replace(
        turn,
        status="incomplete",
        messages=tuple(messages),
        tool_calls=calls,
        outcome=outcome,
        suspension=None,
        finished_at=datetime.now(UTC),
    )


def recover_running_turn(turn: Turn, read_only: Callable[[str], bool]) -> Turn:
    """Close a turn the process left ``running`` as ``process_exit``."""
    return close_stored_turn(
        turn, "process_exit", read_only, error="the process running this turn exited"
    )


def close_for_fork(turn: Turn) -> Turn:
    """A fork's copy of an open turn: incomplete as is; suspended or running closed canceled."""
    if turn.status == "incomplete":
        return turn
    return close_stored_turn(turn, "canceled", lambda _: False, error="closed by a fork")
