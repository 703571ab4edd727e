"""Executing one tool call under its governance: timeout, retry policy, failures as data.

The call itself is the runner's (``Runner.call_tool``); this module builds what the tool
sees (its ``ToolContext``, the parent-call marker a run it starts records), its trace span,
and where the usage it reports goes.

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
call that returns resets its count; the count is this module's, kept on the ``Run``); the
next one fails like a tool exception, with a warning and no traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dive.agent._outputs import error_result
from dive.agent._parent import PARENT_CALL, ParentCall
from dive.agent._run import Run
from dive.agent._runner import ToolOutcome, ToolTask
from dive.llm import Usage
from dive.messages import ToolCall
from dive.tools import ResumedCall, Tool, ToolContext
from dive.tracing import ToolCallInfo

__all__ = ["execute_call"]


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


async def execute_call(
    run: Run, tool: Tool, call: ToolCall, value: Any, resumed: ResumedCall | None = None
) -> ToolOutcome:
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
        session_id=run.session_id,
        agent_name=run.config.name,
        cancel=setup.cancel,
        emit=run.events.emit_serialized,
        agent=setup.agent,
        on_usage=route,
        resumed=resumed,
    )
    task = ToolTask(
        ref=run.ref(), tool=tool, call=call, input=value, context=ctx, log=run.config.log
    )
    parent = PARENT_CALL.set(ParentCall(turn_id, call.id))
    try:
        if not run.config.traced:
            out = await run.runner.call_tool(task)
        else:
            out = await _traced(run, task)
        out = _count_retries(run, call, out)
        if out.background is not None:
            route.target = out.background.add_usage  # usage reported from now on goes with it
            run.hand_to_background(out.background)
        return out
    finally:
        PARENT_CALL.reset(parent)
        ctx.closed = True
        route.close()


def _count_retries(run: Run, call: ToolCall, out: ToolOutcome) -> ToolOutcome:
    """Count a tool's ``ModelRetry`` in a row; past ``limits.max_tool_retries`` it fails."""
    if out.model_retry is None:
        if out.error is None:  # the tool returned: its count starts again
            run.model_retries.pop(call.name, None)
        return out
    count = run.model_retries.get(call.name, 0) + 1
    run.model_retries[call.name] = count
    limit = run.config.limits.max_tool_retries
    if count <= limit:
        return out
    run.config.log.warning(
        "tool %s (call %s) asked for a retry more than %d times in a row: %s",
        call.name,
        call.id,
        limit,
        out.model_retry,
    )
    text = (
        f"Tool execution error: {out.model_retry} (the tool asked for a retry more than "
        f"{limit} times in a row; limits.max_tool_retries)"
    )
    return ToolOutcome(result=error_result(call, text), error=f"ModelRetry({out.model_retry!r})")


async def _traced(run: Run, task: ToolTask) -> ToolOutcome:
    d = task.tool.definition
    span = run.config.tracer.start_tool_call(
        ToolCallInfo(
            call=task.call,
            origin=d.origin,
            tags=tuple(sorted(d.tags)),
            effect=d.effect_type,
            risk=d.risk_level,
        )
    )
    try:
        res = await run.runner.call_tool(task)
    except BaseException as exc:
        span.end(exc)
        raise
    span.set_result(res.result)
    span.end(None)
    return res
