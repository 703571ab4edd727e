"""The one place a turn ends: :func:`end_turn`, for every ``Ending``.

Completed: ``post_generation`` → write → ``turn_ended``. Suspended: ``on_suspend`` (new
suspensions; an abort closes the pending calls and ends ``hook_abort``) →
``post_generation`` → write → ``turn_ended``. Incomplete: close (every call answered through
the ledger's ``close``, partial output kept or dropped, the outcome note last) →
``on_incomplete_turn`` → write → ``turn_ended``. A rejected partial resume returns the
stored turn with ``error`` set. The write is bounded by ``save_timeout``; the terminal event
is emitted even if earlier steps failed, and a handler error on it is only logged.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime
from typing import Any, assert_never

from dive.agent._events import ToolCallResultEvent, TurnEndedEvent
from dive.agent._loop import unique_call_ids
from dive.agent._result import RunResult, answer_text
from dive.agent._run import Run
from dive.errors import EventHandlerError, HookAbort, SaveRejectedError
from dive.messages import Message
from dive.redaction import redact
from dive.tracing import AgentRunSpan
from dive.turns import (
    SuspensionState,
    Turn,
    TurnOutcome,
    TurnStatus,
    close_turn,
    is_reminder,
    outcome_note,
    reminder_message,
)
from dive.turns._engine import (
    Completed,
    Ending,
    Incomplete,
    ResumeRejected,
    Suspended,
    advise,
    answer_open_calls,
)

__all__ = ["end_turn"]


def _salvage_stream(run: Run) -> list[str]:
    """Keep what an interrupted stream produced; return the ids of its complete calls."""
    acc = run.state.take_partial_stream()
    if acc is None:
        return []
    blocks = acc.partial()
    if not blocks or run.config.incomplete_turns.drop_partial_text:
        return []
    state = run.state
    msg = Message(
        role="assistant",
        content=unique_call_ids(blocks, state.calls),
        created_at=run.runner.now(),
    )
    return [c.id for c in state.add_response(msg, run.tools.definition_of)]


def _settle_in_flight(run: Run, ending: Incomplete) -> list[str]:
    """Close the calls of the group or response in flight; return their ids in order."""
    state = run.state
    ids: list[str] = []
    group = state.take_group()
    if group is not None:
        ids.extend(c.id for c in group.calls)
        state.calls.close(ids)
        for m in group.messages():
            state.transcript.add(m)
    ids.extend(c.id for c in ending.unrun if c.id not in ids)
    ids.extend(_salvage_stream(run))
    return ids


def _outcome(run: Run, ending: Incomplete, ids: list[str]) -> TurnOutcome:
    records = run.state.calls.records(ids)
    err = ending.error
    text = ending.error_text if ending.error_text is not None else (str(err) if err else None)
    if err is not None and not text:
        text = type(err).__name__
    if text is not None:
        text = redact(text)
    return TurnOutcome(
        reason=ending.reason,
        next=advise(ending.reason, records),
        error=text,
        hook=ending.hook,
        usage_unknown=run.state.usage_unknown,
        tool_calls=records,
    )


def _renote(
    messages: list[Message], outcome: TurnOutcome, late: list[Message], at: datetime
) -> list[Message]:
    """Put late recorded reminders before the note, and make the note match ``outcome``."""
    note = reminder_message(outcome_note(outcome), at=at)
    for i in range(len(messages) - 1, -1, -1):
        if is_reminder(messages[i], "turn-incomplete"):
            return [*messages[:i], *late, note, *messages[i + 1 :]]
    return [*messages, *late, note]


async def _on_incomplete(
    run: Run, messages: list[Message], outcome: TurnOutcome
) -> tuple[list[Message], TurnOutcome]:
    hooked = await run.hook(
        "on_incomplete_turn",
        status="incomplete",
        record=messages,
        outcome=outcome,
        output_messages=list(messages),
    )
    changed: TurnOutcome = hooked.changed["outcome"] or outcome
    out = list(hooked.changed["output_messages"])
    at = run.runner.now()
    late = [reminder_message(r, at=at) for r, keep in hooked.reminders if keep]
    if changed != outcome or late:
        out = _renote(out, changed, late, at)
    return out, changed


async def _close(run: Run, ending: Incomplete) -> TurnOutcome:
    ids = _settle_in_flight(run, ending)
    outcome = _outcome(run, ending, ids)
    state = run.state
    messages = close_turn(
        state.transcript.record,
        outcome,
        recorded_reminders=state.transcript.take_recorded_reminders(),
        at=run.runner.now(),
    )
    await _pay_owed_events(run, messages)
    if run.config.hooks.on_incomplete_turn:
        messages, outcome = await _on_incomplete(run, messages, outcome)
    state.transcript.close_record(messages)
    return outcome


async def _pay_owed_events(run: Run, messages: list[Message]) -> None:
    """Every announced call gets its ``tool_call_result``, even when its batch was stopped."""
    owed = run.events.owed()
    if not owed:
        return
    answers = {r.tool_call_id: r for m in messages if (r := m.tool_result) is not None}
    ledger = run.state.calls
    for call in owed:
        state = ledger.state(call.id) if call.id in ledger else "unknown"
        event = ToolCallResultEvent(call=call, result=answers.get(call.id), state=state)
        await run.events.emit_quietly(event, "an owed tool_call_result", run.config.log)


async def _write(run: Run, turn: Turn) -> tuple[Turn, BaseException | None]:
    """The final write, bounded by ``save_timeout``; honest persistence either way."""
    session = run.setup.session
    if session is None:
        return turn, None
    limit = run.config.incomplete_turns.save_timeout
    state = run.state
    task = asyncio.ensure_future(run.runner.write(session, turn, expected_revision=state.revision))
    done, _ = await asyncio.wait({task}, timeout=limit)
    if not done:
        task.cancel()
        err = TimeoutError(f"saving turn {turn.id} did not finish within {limit:g} s")
        return replace(turn, persistence="unknown"), err
    exc = task.exception()
    if exc is None:
        revision = task.result()
        state.saved(revision)
        return replace(turn, persistence="saved", revision=revision), None
    persistence = "failed" if isinstance(exc, SaveRejectedError) else "unknown"
    run.config.log.error("saving turn %s failed (%s)", turn.id, persistence, exc_info=exc)
    return replace(turn, persistence=persistence), exc


def _complete(run: Run, ending: Completed) -> None:
    state = run.state
    if ending.unrun:  # a refusal: its calls are answered "Not run", no note
        states = {c.id: "not_started" for c in ending.unrun}
        state.transcript.close_record(answer_open_calls(state.transcript.record, states))
    state.transcript.flush_reminders()


async def _on_suspend(run: Run, ending: Suspended) -> Incomplete | None:
    """``on_suspend`` for new suspensions; an abort ends the turn ``hook_abort``."""
    hooks = run.config.hooks.on_suspend
    if not (ending.new and hooks):
        return None
    try:
        await run.hook(
            "on_suspend", status="suspended", output_messages=list(run.state.transcript.record)
        )
    except HookAbort as exc:
        return Incomplete(reason="hook_abort", error=exc, hook="on_suspend")
    return None


async def _stored(run: Run, result: RunResult[Any], error: BaseException) -> RunResult[Any]:
    """A failed partial resume: the stored turn as it now stands, with ``error`` set."""
    turn = run.setup.stored
    session = run.setup.session
    if session is not None:
        try:
            snap = await run.runner.load(session)
            turn = snap.open_turn or turn
        except Exception:
            run.config.log.exception("reloading the session after a failed write failed")
    if turn is None:
        return replace(result, error=error)
    return replace(result, turn=turn, output_messages=turn.messages, error=error)


async def _terminal(run: Run, result: RunResult[Any]) -> RunResult[Any]:
    """``turn_ended``: delivered, never recorded in ``result.items``; a handler error is logged."""
    try:
        await run.events.deliver(TurnEndedEvent(turn=result.turn))
    except EventHandlerError:
        run.config.log.exception("the on_event handler failed on turn_ended")
    return result


def _result(
    run: Run, status: TurnStatus, turn: Turn, error: BaseException | None
) -> RunResult[Any]:
    state = run.state
    last = state.last_response
    has_output, output = run.output.accepted, run.output.value
    if status != "completed":
        has_output, output = False, None
    elif not has_output and run.config.output.text:
        has_output, output = True, answer_text(turn.messages)
    return RunResult(
        status=status,
        turn=turn,
        usage=state.usage,
        output_messages=turn.messages,
        history=state.transcript.history,
        items=run.events.items,
        error=error,
        stop_reason=last.stop_reason if last is not None else None,
        stop_details=last.stop_details if last is not None else None,
        model=run.setup.model.name,
        created_at=state.created_at,
        finished_at=turn.finished_at,
        raw_output=output,
        has_output=has_output,
    )


async def _rejected(run: Run, error: BaseException, span: AgentRunSpan | None) -> RunResult[Any]:
    stored = run.setup.stored
    assert stored is not None
    base = _result(run, "suspended", stored, None)
    result = await _stored(run, replace(base, finished_at=run.runner.now()), error)
    if span is not None:
        span.end(error)
    return await _terminal(run, result)


async def end_turn(run: Run, ending: Ending, span: AgentRunSpan | None) -> RunResult[Any]:
    """End the turn: close, end hooks, write, ``turn_ended``; return the result."""
    state = run.state
    outcome: TurnOutcome | None = None
    suspension: SuspensionState | None = None
    if isinstance(ending, Suspended):
        aborted = await _on_suspend(run, ending)
        if aborted is not None:
            ending = aborted
    match ending:
        case ResumeRejected():
            return await _rejected(run, ending.error, span)
        case Completed():
            status: TurnStatus = "completed"
            _complete(run, ending)
        case Suspended():
            status = "suspended"
            suspension = state.suspend()
        case Incomplete():
            status = "incomplete"
            outcome = await _close(run, ending)
        case _:
            assert_never(ending)
    error = ending.error if isinstance(ending, Incomplete) else None
    turn = state.final_turn(status, outcome=outcome, suspension=suspension)
    result = _result(run, status, turn, error)
    if status != "incomplete" and run.config.hooks.post_generation:
        await run.hook(
            "post_generation",
            status=status,
            record=turn.messages,
            result=result,
            output_messages=list(turn.messages),
            usage=state.usage,
        )
    return await _persist(run, result, span, ending)


def _span_outcome(turn: Turn) -> tuple[str | None, str | None]:
    """A run span's reason and next step: the outcome's, or a suspension's reasons."""
    if turn.suspension is not None:
        reasons = sorted({p.reason for p in turn.suspension.pending_tool_calls})
        return (",".join(reasons) or None), "resume"
    outcome = turn.outcome
    return (outcome.reason, outcome.next) if outcome is not None else (None, None)


async def _persist(
    run: Run, result: RunResult[Any], span: AgentRunSpan | None, ending: Ending
) -> RunResult[Any]:
    """Write, end the span, deliver a partial resume's events, then ``turn_ended``."""
    turn, save_error = await _write(run, result.turn)
    result = replace(
        result,
        turn=turn,
        output_messages=turn.messages,
        save_error=save_error,
        background_tasks=run.background_tasks,
    )
    if span is not None:
        span.set_usage(run.state.usage)
        span.set_response(turn.status, *_span_outcome(turn))
        span.end(result.error)
    deferred = run.events.take_deferred()
    for event in deferred:  # a partial resume's results: after the write
        failed = await run.events.emit_quietly(event, "a resumed result", run.config.log)
        if failed is not None:
            result = replace(result, error=failed)
    if deferred:
        result = replace(result, items=run.events.items)
    partial = isinstance(ending, Suspended) and not ending.new and run.setup.resume is not None
    if partial and save_error is not None:
        result = await _stored(run, result, save_error)
    return await _terminal(run, result)
