"""Driving a turn past its boundary, up to its one ending.

``pre_generation``, the response timeout, cancellation and failure classification, then
:func:`dive.agent._end.finish_turn`.

Classification precedence: cancellation (task cancel, ``CancelToken.cancel()``, soft cancel)
→ ``canceled``; response timeout → ``deadline``; ``HookAbort`` → ``hook_abort``; the event
handler's exception → ``callback_error``; a model-call failure → ``stream_interrupted`` once a
content event had been delivered, else ``provider_error``; anything else → ``error``.
If the calling task itself is cancelled, the turn is closed and saved, ``turn_ended`` is
emitted, and ``CancelledError`` is re-raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from dive.agent._background import BackgroundResult
from dive.agent._end import finish_turn, stored_result
from dive.agent._hooks import call_hook
from dive.agent._loop import Ending, run_loop
from dive.agent._modelcall import ModelCallError
from dive.agent._records import IncompleteReason
from dive.agent._result import RunResult
from dive.agent._resume import PartialResumeFailed
from dive.agent._run import TurnRun
from dive.errors import (
    DeadlineExceededError,
    EventHandlerError,
    HookAbort,
    RunCanceledError,
    SoftCanceled,
    StreamInterruptedError,
)
from dive.messages import ToolCall
from dive.tracing import AgentRunInfo, AgentRunSpan, NopTracer

__all__ = ["execute"]


class _Deadline(Exception):
    pass


async def _pre_generation(run: TurnRun) -> None:
    ctx = run.hook_context("pre_generation")
    ctx.messages = list(run.working)
    for hook in run.agent.hooks.pre_generation:
        try:
            await call_hook(hook, ctx)
        except HookAbort as exc:
            exc.hook = "pre_generation"
            raise
    run.system_prompt = ctx.system_prompt
    run.working = list(ctx.messages)
    run.take_hook_reminders(ctx)


async def _timed(run: TurnRun) -> Ending:
    timeout = run.agent.limits.response_timeout
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


async def _raced(run: TurnRun) -> Ending:
    """Run the loop, racing a hard cancel of the token."""
    token = run.cancel
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


def _classify(run: TurnRun, exc: BaseException) -> IncompleteReason:
    token = run.cancel
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


def _public_error(run: TurnRun, exc: BaseException, reason: IncompleteReason) -> BaseException:
    if isinstance(exc, PartialResumeFailed):
        return exc
    if reason == "canceled" and run.claim_lost is not None:
        return run.claim_lost
    if isinstance(exc, _Deadline):
        limit = run.agent.limits.response_timeout
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
    if isinstance(exc, SoftCanceled):
        return exc
    return exc


async def _drive(run: TurnRun) -> Ending:
    try:
        if run.agent.hooks.pre_generation:
            await _pre_generation(run)
        return await _raced(run)
    except Exception as exc:
        reason = _classify(run, exc)
        return Ending(status="incomplete", reason=reason, error=_public_error(run, exc, reason))


def _start_span(run: TurnRun) -> AgentRunSpan | None:
    tracer = run.agent.tracer
    if isinstance(tracer, NopTracer):
        return None
    return tracer.start_agent_run(
        AgentRunInfo(
            agent_name=run.agent.name,
            agent_id=run.agent.id,
            model=run.model.name,
            provider=run.model.provider,
            turn_id=run.turn_id,
            session_id=run.session_id,
        )
    )


async def _deliver_background(run: TurnRun, results: Sequence[BackgroundResult]) -> None:
    """``post_background_tool_use`` for each delivered result (observe only; logged)."""
    hooks = run.agent.hooks.post_background_tool_use
    for r in results:
        ctx = run.hook_context("post_background_tool_use")
        ctx.call = ToolCall(id=r.tool_call_id, name=r.name)
        ctx.tool_result = r.result
        ctx.tool = run.agent.static_tools.get(r.name)
        for hook in hooks:
            try:
                await call_hook(hook, ctx)
            except Exception:
                run.agent.log.exception("post_background_tool_use hook failed")


async def execute(run: TurnRun, background: Sequence[BackgroundResult] = ()) -> RunResult[Any]:
    """Everything after the turn boundary; returns the one result of the turn."""
    span = _start_span(run)
    if background and run.agent.hooks.post_background_tool_use:
        await _deliver_background(run, background)
    cancelled: asyncio.CancelledError | None = None
    try:
        ending = await _drive(run)
    except asyncio.CancelledError as exc:
        cancelled = exc
        ending = Ending(
            status="incomplete", reason="canceled", error=_public_error(run, exc, "canceled")
        )
    if cancelled is None:
        if isinstance(ending.error, PartialResumeFailed):
            return await stored_result(run, ending.error.cause, span)
        return await finish_turn(run, ending, span)
    task = asyncio.ensure_future(finish_turn(run, ending, span))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.wait({task})
    raise cancelled
