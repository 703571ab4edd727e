"""Executing one tool call under its governance: timeout, retry policy, failures as data.

``timeout`` is a hard deadline around each attempt; on expiry the handler is cancelled and the
call is answered ``Tool "x" timed out after N s.``. It is recorded ``unknown`` (it may have taken
effect, so an incomplete turn advises ``reconcile``), except for a ``read_only`` tool: a read
has no effect to reconcile, so its timed-out call is recorded ``completed`` with the timeout as
its error result, like any other call that finished with an error.

The retry policy retries handler exceptions and timeouts, never ``is_error`` results,
cancellation or ``ToolFatalError``. It only ever runs for idempotent or read-only tools: a
``ToolDefinition`` refuses a policy of more than one attempt on any other tool, and a single
attempt is all a non-idempotent tool gets here even if its definition was forged. A tool
exception becomes ``Tool execution error: <message>``; the traceback is logged, never sent.

``ModelRetry(message)`` is not a failure: the message goes to the model as the call's result
(with "Fix the errors and try again."), logged at debug level only, and the retry policy does
not run the call again. Each tool may do so ``limits.max_tool_retries`` times in a row (a
call that returns resets its count); the next one fails like a tool exception, with a warning
and no traceback.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dive.agent._background import start_background, started_text
from dive.agent._output import ModelRetry
from dive.agent._outputs import error_result, to_tool_result
from dive.agent._parent import PARENT_CALL, ParentCall
from dive.agent._run import Run
from dive.errors import ToolFatalError
from dive.llm import Usage
from dive.messages import ToolCall, ToolResult
from dive.redaction import redact
from dive.tools import Background, ResumedCall, Suspend, Tool, ToolContext, ToolReturn
from dive.tracing import ToolCallInfo
from dive.turns import CallState, PendingToolCall

__all__ = ["ExecResult", "execute_call"]


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What one call produced: its result and state (``unknown`` after most timeouts).

    A call that returned ``Suspend`` has state ``waiting`` and ``pending`` set; its
    ``result`` is a placeholder that is never recorded.
    """

    result: ToolResult
    state: CallState = "completed"
    error: str | None = None
    pending: PendingToolCall | None = None
    terminal: bool = False


class _Timeout(Exception):
    pass


class _UsageRoute:
    """Where a call's reported usage goes: its turn, or its background task once it moved.

    Usage reported after the call ended (and did not move to the background) is dropped.
    """

    __slots__ = ("_turn", "target")

    def __init__(self, turn: Callable[[Usage], None]) -> None:
        self._turn = turn
        self.target: Callable[[Usage], None] | None = turn

    def __call__(self, usage: Usage) -> None:
        if self.target is not None:
            self.target(usage)

    def close(self) -> None:
        if self.target is self._turn:
            self.target = None


async def _attempt(tool: Tool, value: Any, ctx: ToolContext, limit: float | None) -> Any:
    if limit is None:
        return await tool.call(value, ctx)
    cm = asyncio.timeout(limit)
    try:
        async with cm:
            return await tool.call(value, ctx)
    except TimeoutError:
        if cm.expired():
            raise _Timeout() from None
        raise


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:g}"


async def _run_with_policy(
    run: Run,
    tool: Tool,
    call: ToolCall,
    value: Any,
    ctx: ToolContext,
    route: _UsageRoute | None = None,
) -> ExecResult:
    d = tool.definition
    policy = d.retry_policy
    attempts = 1
    if policy is not None and (d.idempotent or d.read_only):
        attempts = policy.max_attempts  # only a tool a repeat cannot harm is retried
    last = ""
    for k in range(attempts):
        ctx.attempt = k + 1
        try:
            if d.timeout is None:
                output = await tool.call(value, ctx)
            else:
                output = await _attempt(tool, value, ctx, d.timeout)
        except _Timeout:
            last = f'Tool "{call.name}" timed out after {_fmt_seconds(d.timeout or 0)} s.'
            if k + 1 == attempts:
                state: CallState = "completed" if d.read_only else "unknown"
                return ExecResult(result=error_result(call, last), state=state, error=last)
        except ModelRetry as exc:
            return _model_retry(run, call, exc)
        except ToolFatalError as exc:
            text = redact(f"Tool execution error: {exc}")
            return ExecResult(result=error_result(call, text), error=redact(repr(exc)))
        except Exception as exc:
            run.config.log.error("tool %s (call %s) raised", call.name, call.id, exc_info=True)
            last = redact(
                f"Tool execution error: {exc}" if str(exc) else f"Tool execution error: {exc!r}"
            )
            if k + 1 == attempts:
                if attempts > 1:
                    last = f"{last} (after {attempts} attempts)"
                return ExecResult(result=error_result(call, last), error=redact(repr(exc)))
        else:
            run.model_retries.pop(call.name, None)
            return _convert(run, tool, call, output, route)
        assert policy is not None
        delay = policy.delay(k)
        await asyncio.sleep(delay + random.uniform(0, delay * 0.1))
    raise AssertionError("unreachable")  # pragma: no cover


RETRY_ADVICE = "Fix the errors and try again."


def _model_retry(run: Run, call: ToolCall, exc: ModelRetry) -> ExecResult:
    """The model's feedback for a tool's ``ModelRetry``, or a failure once over the budget."""
    count = run.model_retries.get(call.name, 0) + 1
    run.model_retries[call.name] = count
    limit = run.config.limits.max_tool_retries
    message = redact(exc.message)
    log = run.config.log
    if count <= limit:
        log.debug("tool %s (call %s) asked the model to retry: %s", call.name, call.id, message)
        return ExecResult(result=error_result(call, f"{message}\n\n{RETRY_ADVICE}"))
    log.warning(
        "tool %s (call %s) asked for a retry more than %d times in a row: %s",
        call.name,
        call.id,
        limit,
        message,
    )
    text = (
        f"Tool execution error: {message} (the tool asked for a retry more than {limit} "
        "times in a row; limits.max_tool_retries)"
    )
    return ExecResult(result=error_result(call, text), error=redact(repr(exc)))


def _convert(
    run: Run, tool: Tool, call: ToolCall, output: Any, route: _UsageRoute | None
) -> ExecResult:
    if isinstance(output, Suspend):
        pending = PendingToolCall(
            id=call.id,
            name=call.name,
            input=call.arguments,
            prompt=output.prompt,
            reason=output.reason,
            metadata=output.metadata,
            halts_batch=tool.definition.halts_batch,
            started=True,
            call_again=output.call_again,
        )
        return ExecResult(
            result=error_result(call, output.prompt), state="waiting", pending=pending
        )
    if isinstance(output, Background):
        handle = start_background(output, call, run.state.turn_id)
        if route is not None:
            route.target = handle.add_usage  # usage reported from now on goes with the result
        run.hand_to_background(handle)
        return ExecResult(result=to_tool_result(call, started_text(handle)))
    ends = isinstance(output, ToolReturn) and output.terminal
    return ExecResult(result=to_tool_result(call, output), terminal=ends)


async def execute_call(
    run: Run, tool: Tool, call: ToolCall, value: Any, resumed: ResumedCall | None = None
) -> ExecResult:
    """Run one validated call inside a tool span (a run it starts records it as its parent).

    ``resumed`` is set when a ``call_again`` suspension is called again with its answer.
    """
    setup = run.setup
    state = run.state
    turn_id = state.turn_id
    route = _UsageRoute(state.add_usage)
    ctx = ToolContext(
        tool_call_id=call.id,
        tool_name=call.name,
        turn_id=turn_id,
        values=setup.values,
        deps=setup.deps,
        session_id=setup.session_id,
        agent_name=run.config.name,
        cancel=setup.cancel,
        emit=run.events.emit_serialized,
        agent=setup.agent,
        on_usage=route,
        resumed=resumed,
    )
    parent = PARENT_CALL.set(ParentCall(turn_id, call.id))
    try:
        if not run.config.traced:
            return await _run_with_policy(run, tool, call, value, ctx, route)
        return await _traced(run, tool, call, value, ctx, route)
    finally:
        PARENT_CALL.reset(parent)
        ctx.closed = True
        route.close()


async def _traced(
    run: Run, tool: Tool, call: ToolCall, value: Any, ctx: ToolContext, route: _UsageRoute
) -> ExecResult:
    tracer = run.config.tracer
    d = tool.definition
    span = tracer.start_tool_call(
        ToolCallInfo(
            call=call,
            origin=d.origin,
            tags=tuple(sorted(d.tags)),
            effect=d.effect_type,
            risk=d.risk_level,
        )
    )
    try:
        res = await _run_with_policy(run, tool, call, value, ctx, route)
    except BaseException as exc:
        span.end(exc)
        raise
    span.set_result(res.result)
    span.end(None)
    return res
