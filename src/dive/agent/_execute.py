"""Driving a turn past its boundary, up to its one ending.

``pre_generation``, the response timeout, cancellation and failure classification, then
:func:`dive.agent._end.end_turn`.

Classification precedence: cancellation (task cancel, ``CancelToken.cancel()``, soft cancel)
→ ``canceled``; response timeout → ``deadline``; ``HookAbort`` → ``hook_abort``; the event
handler's exception → ``callback_error``; a model-call failure → ``stream_interrupted`` once a
content event had been delivered, else ``provider_error``; anything else → ``error``.
If the calling task itself is cancelled, the turn is closed and saved, ``turn_ended`` is
emitted, and ``CancelledError`` is re-raised.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dive.agent._end import end_turn
from dive.agent._loop import run_loop
from dive.agent._modelcall import ModelCallError
from dive.agent._result import RunResult
from dive.agent._run import Run
from dive.errors import (
    DeadlineExceededError,
    EventHandlerError,
    HookAbort,
    RunCanceledError,
    StreamInterruptedError,
)
from dive.messages import ToolCall
from dive.redaction import redact_exception
from dive.tracing import AgentRunInfo, AgentRunSpan
from dive.turns import IncompleteReason
from dive.turns._engine import Ending, Incomplete

__all__ = ["execute"]


class _Deadline(Exception):
    pass


async def _pre_generation(run: Run) -> None:
    state = run.state
    out = await run.hook("pre_generation", messages=list(state.transcript.working))
    state.transcript.set_system_prompt(out.changed["system_prompt"])
    state.transcript.replace_working(out.changed["messages"])
    state.transcript.queue_reminders(out.reminders)


async def _timed(run: Run) -> Ending:
    timeout = run.config.limits.response_timeout
    if timeout is None:
        return await run_loop(run)
    cm = asyncio.timeout(timeout)
    try:
        async with cm:
            return await run_loop(run)
    except TimeoutError:
        if cm.expired():
            raise _Deadline() from None
        raise


async def _raced(run: Run) -> Ending:
    """Run the loop, racing a hard cancel of the token."""
    token = run.setup.cancel
    if token is None:
        return await _timed(run)
    if token.cancelled:
        raise RunCanceledError(token.reason or "canceled")
    task = asyncio.ensure_future(_timed(run))
    waiter = asyncio.ensure_future(token.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        waiter.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if task.done():
        waiter.cancel()
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise RunCanceledError(token.reason or "canceled")


def _classify(run: Run, exc: BaseException) -> IncompleteReason:
    token = run.setup.cancel
    if isinstance(exc, RunCanceledError | asyncio.CancelledError) or (
        token is not None and token.cancelled
    ):
        return "canceled"
    if isinstance(exc, _Deadline):
        return "deadline"
    if isinstance(exc, HookAbort):
        return "hook_abort"
    if isinstance(exc, EventHandlerError):
        return "callback_error"
    if isinstance(exc, ModelCallError):
        return "stream_interrupted" if exc.content_started else "provider_error"
    return "error"


def _public_error(run: Run, exc: BaseException, reason: IncompleteReason) -> BaseException:
    if reason == "canceled" and run.setup.claim_lost is not None:
        return run.setup.claim_lost
    if isinstance(exc, _Deadline):
        limit = run.config.limits.response_timeout
        return DeadlineExceededError(f"the turn's time limit was reached ({limit:g} s)")
    if isinstance(exc, ModelCallError):
        cause = exc.cause
        if reason == "stream_interrupted" and not isinstance(cause, StreamInterruptedError):
            err = StreamInterruptedError(f"the model stream failed after content began: {cause}")
            err.__cause__ = cause
            return err
        return cause
    if isinstance(exc, asyncio.CancelledError):
        return RunCanceledError("the calling task was cancelled")
    return exc


def _incomplete(run: Run, exc: BaseException) -> Incomplete:
    reason = _classify(run, exc)
    hook = exc.hook if isinstance(exc, HookAbort) else None
    error = redact_exception(_public_error(run, exc, reason))
    return Incomplete(reason=reason, error=error, hook=hook)


async def _drive(run: Run) -> Ending:
    try:
        if run.config.hooks.pre_generation:
            await _pre_generation(run)
        return await _raced(run)
    except Exception as exc:
        return _incomplete(run, exc)


def _start_span(run: Run) -> AgentRunSpan | None:
    config = run.config
    if not config.traced:
        return None
    model = run.setup.model
    return config.tracer.start_agent_run(
        AgentRunInfo(
            agent_name=config.name,
            agent_id=config.id,
            model=model.name,
            provider=model.provider,
            turn_id=run.state.turn_id,
            session_id=run.setup.session_id,
            attributes=_parent_attributes(run),
        )
    )


def _parent_attributes(run: Run) -> dict[str, str]:
    origin = run.state.origin
    if origin.parent_turn_id is None:
        return {}
    return {
        "dive.parent_turn.id": origin.parent_turn_id,
        "dive.parent_tool_call.id": origin.parent_tool_call_id or "",
    }


async def _deliver_background(run: Run) -> None:
    """``post_background_tool_use`` for each delivered result (observe only; logged)."""
    for r in run.setup.background:
        await run.hook(
            "post_background_tool_use",
            call=ToolCall(id=r.tool_call_id, name=r.name),
            tool_result=r.result,
            tool=run.config.static.by_name.get(r.name),
        )


async def execute(run: Run) -> RunResult[Any]:
    """Everything after the turn boundary; returns the one result of the turn."""
    span = _start_span(run)
    try:
        return await _execute(run, span)
    finally:
        leave = getattr(span, "leave", None)  # optional: the tracer's context, in this task
        if leave is not None:
            leave()


async def _execute(run: Run, span: AgentRunSpan | None) -> RunResult[Any]:
    try:
        for r in run.setup.background:  # work done in the background is paid by this turn
            if r.usage.requests or r.usage.total_input_tokens or r.usage.output_tokens:
                run.state.add_usage(r.usage)
        if run.setup.background and run.config.hooks.post_background_tool_use:
            await _deliver_background(run)
        ending = await _drive(run)
    except BaseException as exc:
        # a task cancel, or a BaseException a tool let through (KeyboardInterrupt, SystemExit,
        # or one of the caller's): close and record the turn, then re-raise
        if isinstance(exc, asyncio.CancelledError):
            ending = Incomplete(reason="canceled", error=_public_error(run, exc, "canceled"))
        else:
            ending = _incomplete(run, exc)
        task = asyncio.ensure_future(end_turn(run, ending, span))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            await asyncio.wait({task})
        raise
    return await end_turn(run, ending, span)
