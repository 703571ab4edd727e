"""``cancel_suspended_turn``: close a suspended turn without a model call.

Calls whose tool returned ``Suspend`` become ``unknown`` (they may have dispatched something);
calls held at the approval gate, never started, become ``not_started``; completed siblings
keep their results. The outcome is ``canceled`` with ``next="reconcile"`` unless every unknown
call's tool is read-only. The closed turn replaces the suspended one; ``on_incomplete_turn``
runs; the result is incomplete with ``error=None``; ``turn_ended`` is emitted.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dive.agent._events import TurnEndedEvent
from dive.agent._hooks import call_hook
from dive.agent._records import SuspensionState, ToolCallRecord, Turn, TurnOutcome
from dive.agent._recover import close_stored_turn
from dive.agent._result import RunResult
from dive.agent._run import EventHandler
from dive.errors import NoSuspendedTurnError, SaveRejectedError
from dive.messages import Message
from dive.sessions._protocol import Session

if TYPE_CHECKING:
    from dive.agent._agent import Agent

__all__ = ["cancel_suspended"]


def _records_for_cancel(turn: Turn, state: SuspensionState) -> tuple[ToolCallRecord, ...]:
    started = {p.id: p.started for p in state.pending_tool_calls}
    out: list[ToolCallRecord] = []
    for rec in turn.tool_calls:
        if rec.id in started:
            rec = replace(rec, state="running" if started[rec.id] else "waiting")
        out.append(rec)
    return tuple(out)


def turn_from_state(state: SuspensionState) -> Turn:
    calls = next(m for m in reversed(state.turn_messages) if m.tool_calls).tool_calls
    done = set(state.completed_tool_calls)
    records = tuple(
        ToolCallRecord(id=c.id, name=c.name, state="completed" if c.id in done else "not_started")
        for c in calls
    )
    return Turn(
        id=state.turn_id,
        status="suspended",
        origin=state.origin,
        messages=state.turn_messages,
        tool_calls=records,
        usage=state.usage,
        suspension=state,
        model_calls=state.model_calls,
        executed_tool_calls=state.executed_tool_calls,
    )


async def cancel_suspended(
    agent: Agent[Any],
    *,
    session: Session | None,
    history: Sequence[Message] | None,
    suspension: SuspensionState | None,
    on_event: EventHandler | None,
) -> RunResult[Any]:
    """See the module docstring."""
    from dive.agent._locks import session_lock

    if session is None:
        if suspension is None:
            raise NoSuspendedTurnError("pass session= or suspension= (with history=) to cancel")
        return await _close(agent, turn_from_state(suspension), None, 0, on_event)
    async with session_lock(session.id):
        snap = await session.load()
        turn = snap.open_turn
        if turn is None or turn.status != "suspended" or turn.suspension is None:
            raise NoSuspendedTurnError(f"session {session.id!r} has no suspended turn to cancel")
        return await _close(agent, turn, session, snap.revision, on_event)


async def _close(
    agent: Agent[Any],
    turn: Turn,
    session: Session | None,
    revision: int,
    on_event: EventHandler | None,
) -> RunResult[Any]:
    assert turn.suspension is not None
    prepared = replace(turn, tool_calls=_records_for_cancel(turn, turn.suspension))
    closed = close_stored_turn(
        prepared, "canceled", agent.is_read_only, error="the suspended turn was canceled"
    )
    closed = await _on_incomplete(agent, closed)
    save_error: BaseException | None = None
    if session is not None:
        try:
            rev = await session.checkpoint(closed, expected_revision=revision)
            closed = replace(closed, persistence="saved", revision=rev)
        except SaveRejectedError as exc:
            closed, save_error = replace(closed, persistence="failed"), exc
        except Exception as exc:
            closed, save_error = replace(closed, persistence="unknown"), exc
    if on_event is not None:
        try:
            out = on_event(TurnEndedEvent(turn=closed))
            if inspect.isawaitable(out):
                await out
        except Exception:
            agent.log.exception("the on_event handler failed on turn_ended")
    return RunResult(
        status="incomplete",
        turn=closed,
        usage=closed.usage,
        output_messages=closed.messages,
        save_error=save_error,
        model=agent.model.name,
        created_at=closed.created_at,
        finished_at=closed.finished_at,
    )


async def _on_incomplete(agent: Agent[Any], turn: Turn) -> Turn:
    hooks = agent.hooks.on_incomplete_turn
    if not hooks:
        return turn
    from dive.agent._hooks import HookContext

    ctx = HookContext(agent=agent, values={}, hook_point="on_incomplete_turn")
    ctx.output_messages = list(turn.messages)
    ctx.turn = turn.outcome
    for hook in hooks:
        try:
            await call_hook(hook, ctx)
        except Exception:
            agent.log.exception("on_incomplete_turn hook failed")
    outcome = ctx.turn if isinstance(ctx.turn, TurnOutcome) else turn.outcome
    return replace(turn, messages=tuple(ctx.output_messages), outcome=outcome)
