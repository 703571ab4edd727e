"""The one place a turn ends.

Completed: ``post_generation`` → write → ``turn_ended``. Incomplete: close (every call
answered, partial output kept or dropped, the outcome note last) → ``on_incomplete_turn`` →
write → ``turn_ended``. The terminal event is emitted even if earlier steps failed; a handler
error on it is only logged.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

from dive.agent._close import advise, answer_open_calls, close_turn, outcome_note
from dive.agent._events import ToolCallResultEvent, TurnEndedEvent
from dive.agent._hooks import call_hook
from dive.agent._loop import Ending
from dive.agent._records import (
    CallState,
    SuspensionState,
    ToolCallRecord,
    Turn,
    TurnOutcome,
    TurnStatus,
)
from dive.agent._reminders import is_reminder, reminder_message
from dive.agent._result import RunResult
from dive.agent._resume import build_suspension
from dive.agent._run import TurnRun
from dive.errors import HookAbort, SaveRejectedError
from dive.messages import Message
from dive.tracing import AgentRunSpan

__all__ = ["finish_turn"]


def _salvage_stream(run: TurnRun) -> list[str]:
    """Keep what an interrupted stream produced; return the ids of its complete calls."""
    acc = run.accumulator
    run.accumulator = None
    if acc is None:
        return []
    blocks = acc.partial()
    if not blocks or run.agent.incomplete_turns.drop_partial_text:
        return []
    msg = Message(role="assistant", content=blocks, created_at=datetime.now(UTC))
    run.add(msg)
    return [c.id for c in msg.tool_calls]


def _in_flight(run: TurnRun, ending: Ending) -> list[str]:
    """Record what the interrupted batch or response left, and return its call ids."""
    ids: list[str] = []
    batch = run.batch
    if batch is not None:
        run.batch = None
        run.owed = [c for c in batch.calls if c.id in batch.announced - batch.emitted]
        for c in batch.calls:
            state = batch.states.get(c.id, "not_started")
            if state == "running":
                state = "unknown"
            elif state == "waiting":  # a tool that suspended itself may have dispatched something
                pending = batch.pending.get(c.id)
                state = "unknown" if pending is not None and pending.started else "not_started"
            run.set_call(c, state)
            ids.append(c.id)
        for m in batch.messages():
            run.add(m)
    for c in ending.pending_calls:
        run.set_call(c, "not_started")
        ids.append(c.id)
    for cid in _salvage_stream(run):
        call = next(c for c in run.record[-1].tool_calls if c.id == cid)
        run.set_call(call, "not_started")
        ids.append(cid)
    return ids


def _outcome(run: TurnRun, ending: Ending, records: tuple[ToolCallRecord, ...]) -> TurnOutcome:
    assert ending.reason is not None
    err = ending.error
    text = ending.error_text if ending.error_text is not None else (str(err) if err else None)
    if err is not None and not text:
        text = type(err).__name__
    return TurnOutcome(
        reason=ending.reason,
        next=advise(ending.reason, records, run.is_read_only),
        error=text,
        hook=getattr(err, "hook", None),
        usage_unknown=run.usage_unknown,
        tool_calls=records,
    )


async def _observe(run: TurnRun, point: str, hooks: Any, result: Any) -> list[Message] | None:
    ctx = run.hook_context(point)
    ctx.result = result
    ctx.output_messages = list(run.record)
    ctx.usage = run.usage
    for hook in hooks:
        try:
            await call_hook(hook, ctx)
        except Exception:
            run.agent.log.exception("%s hook failed", point)
    return ctx.output_messages


def _renote(messages: list[Message], outcome: TurnOutcome, late: list[Message]) -> list[Message]:
    """Put late recorded reminders before the note, and make the note match ``outcome``."""
    note = reminder_message(outcome_note(outcome))
    for i in range(len(messages) - 1, -1, -1):
        if is_reminder(messages[i], "turn-incomplete"):
            return [*messages[:i], *late, note, *messages[i + 1 :]]
    return [*messages, *late, note]


async def _close(run: TurnRun, ending: Ending) -> TurnOutcome:
    ids = _in_flight(run, ending)
    records = run.call_records(ids)
    outcome = _outcome(run, ending, records)
    recorded = [reminder_message(r) for r, keep in run.queued_reminders if keep]
    run.queued_reminders = []
    messages = close_turn(run.record, outcome, recorded_reminders=recorded)
    await _pay_owed_events(run, messages)
    hooks = run.agent.hooks.on_incomplete_turn
    if hooks:
        ctx = run.hook_context("on_incomplete_turn")
        ctx.output_messages = messages
        ctx.turn = outcome
        for hook in hooks:
            try:
                await call_hook(hook, ctx)
            except Exception:
                run.agent.log.exception("on_incomplete_turn hook failed")
        messages = list(ctx.output_messages)
        changed = isinstance(ctx.turn, TurnOutcome) and ctx.turn != outcome
        if changed:
            outcome = cast(TurnOutcome, ctx.turn)
        late = [reminder_message(r) for r, keep in ctx.take_reminders() if keep]
        if changed or late:
            messages = _renote(messages, outcome, late)
    run.record = messages
    return outcome


async def _pay_owed_events(run: TurnRun, messages: list[Message]) -> None:
    """Every announced call gets its ``tool_call_result``, even when its batch was stopped."""
    if not run.owed:
        return
    answers = {r.tool_call_id: r for m in messages if (r := m.tool_result) is not None}
    states: dict[str, CallState] = {
        rec.id: rec.state for rec in run.call_records([c.id for c in run.owed])
    }
    for call in run.owed:
        try:
            await run.emit(
                ToolCallResultEvent(
                    call=call, result=answers.get(call.id), state=states.get(call.id, "unknown")
                )
            )
        except Exception:
            run.agent.log.exception("the on_event handler failed on an owed tool_call_result")
    run.owed = []


async def _write(run: TurnRun, turn: Turn) -> tuple[Turn, BaseException | None]:
    """The final write, bounded by ``save_timeout``; honest persistence either way."""
    session = run.session
    if session is None:
        return turn, None
    limit = run.agent.incomplete_turns.save_timeout
    task = asyncio.ensure_future(session.checkpoint(turn, expected_revision=run.loaded_revision))
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        task.cancel()
        err = TimeoutError(f"saving turn {turn.id} did not finish within {limit:g} s")
        return replace(turn, persistence="unknown"), err
    exc = task.exception()
    if exc is None:
        revision = task.result()
        run.loaded_revision = revision
        return replace(turn, persistence="saved", revision=revision), None
    state = "failed" if isinstance(exc, SaveRejectedError) else "unknown"
    run.agent.log.error("saving turn %s failed (%s)", turn.id, state, exc_info=exc)
    return replace(turn, persistence=state), exc


def _complete(run: TurnRun, ending: Ending) -> None:
    if ending.pending_calls:  # a refusal: its calls are answered "Not run", no note
        for c in ending.pending_calls:
            run.set_call(c, "not_started")
        states = {c.id: "not_started" for c in ending.pending_calls}
        run.record = answer_open_calls(run.record, states)
    run.flush_reminders()


async def _suspend(run: TurnRun, ending: Ending) -> tuple[SuspensionState | None, Ending]:
    """``on_suspend`` (new suspensions), then the suspension state; an abort cancels it."""
    batch = run.suspended_batch
    assert batch is not None
    hooks = run.agent.hooks.on_suspend
    if run.new_suspension and hooks:
        ctx = run.hook_context("on_suspend")
        ctx.output_messages = list(run.record)
        for hook in hooks:
            try:
                await call_hook(hook, ctx)
            except HookAbort as exc:
                exc.hook = "on_suspend"
                for call_id, pending in batch.pending.items():
                    batch.states[call_id] = "running" if pending.started else "not_started"
                run.batch = batch
                return None, Ending(status="incomplete", reason="canceled", error=exc)
            except Exception:
                run.agent.log.exception("on_suspend hook failed")
    for m in batch.result_messages():
        run.add(m)
    return build_suspension(run, batch), ending


async def stored_result(
    run: TurnRun, error: BaseException, span: AgentRunSpan | None
) -> RunResult[Any]:
    """A failed partial resume returns the stored turn, suspended, with ``error`` set."""
    turn = run.stored_turn
    assert turn is not None
    base: RunResult[Any] = RunResult(
        status="suspended",
        turn=turn,
        usage=run.usage,
        output_messages=turn.messages,
        items=tuple(run.items),
        model=run.model.name,
        created_at=run.created_at,
        finished_at=datetime.now(UTC),
    )
    result = await _stored(run, base, error)
    if span is not None:
        span.end(error)
    try:
        await run.emit(TurnEndedEvent(turn=result.turn))
    except Exception:
        run.agent.log.exception("the on_event handler failed on turn_ended")
    run.items.pop()
    return result


def _partial(run: TurnRun) -> bool:
    return run.resume is not None and not run.new_suspension


async def _stored(run: TurnRun, result: RunResult[Any], error: BaseException) -> RunResult[Any]:
    """A failed partial resume: the stored turn as it now stands, with ``error`` set."""
    turn = run.stored_turn
    if run.session is not None:
        try:
            snap = await run.session.load()
            turn = snap.open_turn or turn
        except Exception:
            run.agent.log.exception("reloading the session after a failed write failed")
    if turn is None:
        return replace(result, error=error)
    return replace(result, turn=turn, output_messages=turn.messages, error=error)


async def finish_turn(run: TurnRun, ending: Ending, span: AgentRunSpan | None) -> RunResult[Any]:
    """End the turn: close, end hooks, write, ``turn_ended``; return the result."""
    status: TurnStatus
    outcome: TurnOutcome | None = None
    suspension: SuspensionState | None = None
    if ending.status == "suspended":
        suspension, ending = await _suspend(run, ending)
    if ending.status == "completed":
        status = "completed"
        _complete(run, ending)
    elif suspension is not None:
        status = "suspended"
    else:
        status = "incomplete"
        outcome = await _close(run, ending)
    finished = datetime.now(UTC)
    usage = run.usage
    turn = Turn(
        id=run.turn_id,
        status=status,
        origin=run.origin,
        messages=tuple(run.record),
        tool_calls=run.call_records(),
        usage=run.prior_usage + usage,
        outcome=outcome,
        suspension=suspension,
        created_at=run.created_at,
        finished_at=finished,
        model_calls=run.model_calls,
        executed_tool_calls=run.executed_tool_calls,
    )
    last = run.last_response
    result: RunResult[Any] = RunResult(
        status=status,
        turn=turn,
        usage=usage,
        output_messages=turn.messages,
        items=tuple(run.items),
        error=ending.error if status == "incomplete" else None,
        stop_reason=last.stop_reason if last is not None else None,
        stop_details=last.stop_details if last is not None else None,
        model=run.model.name,
        created_at=run.created_at,
        finished_at=finished,
        output=run.output,
    )
    if status != "incomplete" and run.agent.hooks.post_generation:
        await _observe(run, "post_generation", run.agent.hooks.post_generation, result)
    turn, save_error = await _write(run, turn)
    result = replace(
        result,
        turn=turn,
        output_messages=turn.messages,
        save_error=save_error,
        background_tasks=tuple(run.background_tasks),
    )
    if span is not None:
        span.set_usage(run.usage)
        span.set_response(
            status, outcome.reason if outcome else None, outcome.next if outcome else None
        )
        span.end(ending.error if status == "incomplete" else None)
    for event in run.deferred_events:  # a partial resume's results: after the write
        try:
            await run.emit(event)
        except Exception as exc:
            run.agent.log.exception("the on_event handler failed on a resumed result")
            result = replace(result, error=exc)
    if run.deferred_events:
        result = replace(result, items=tuple(run.items))
    if status == "suspended" and save_error is not None and _partial(run):
        result = await _stored(run, result, save_error)
    try:
        await run.emit(TurnEndedEvent(turn=turn))
    except Exception:
        run.agent.log.exception("the on_event handler failed on turn_ended")
    run.items.pop()  # turn_ended is not part of result.items
    return result
