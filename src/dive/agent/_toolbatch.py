"""Tool batch execution: the calls of one model response.

Sequential (whenever a call is ``sequential_only`` or halting, for single calls, and when
``parallel_tool_execution=False``), in model order with ``terminal`` (and ``runs_last``) tools'
calls moved last, per call: check for a stop → check the halted flag →
``tool_call`` event → validate input → ``pre_tool_use`` → permission gate → approval gate
(its decision noted in the call's record; the policy judges the input a ``pre_tool_use``
rewrite gave, and a held call keeps it) → check soft stop again → execute in a tool span →
post hooks → ``tool_call_result`` event.

Parallel: phase 1 prepares each call in order (events, validation, ``pre_tool_use``, gates);
phase 2 runs one task per prepared call, at most ``max_tool_concurrency`` at once. Calls of
``terminal`` (and ``runs_last``) tools are held out of both phases: once every other call is
done they are prepared and run one by one, in model order, so they see the batch's side
effects — and when one of the others suspended the turn they have not started (nor been
checkpointed as starting), and run on resume. Results are handled in completion order and
recorded in call order.

Call states change only through the turn's call ledger; results go into the turn's open
tool group. Every ``tool_call`` event gets exactly one ``tool_call_result``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dive.agent._approval import DENIED_TEXT, ApprovalDecision, decide
from dive.agent._background import BackgroundTaskHandle
from dive.agent._durable import checkpoint_step
from dive.agent._events import ToolCallEvent, ToolCallResultEvent
from dive.agent._exec import execute_call
from dive.agent._hooks import run_hooks
from dive.agent._outputs import error_result
from dive.agent._run import Run
from dive.agent._runner import ToolOutcome
from dive.errors import HookAbort
from dive.messages import JSONValue, ToolCall, ToolResult
from dive.tools import ResumedCall, SuspendReason, Tool, ToolCallPreview, suggest_tool_names
from dive.turns import HALTED_TEXT, OpenGroup, PendingToolCall, Transition

__all__ = ["last_in_order", "post_hooks", "run_answered", "run_approved", "run_batch", "run_calls"]


@dataclass(slots=True)
class Prepared:
    """A call that passed every gate and may run."""

    call: ToolCall
    tool: Tool
    input: Any
    preview: ToolCallPreview | None
    approved: bool | None = None
    arguments: Mapping[str, Any] | None = None  # a pre_tool_use rewrite (what will run)


def _runs_last(tool: Tool | None) -> bool:
    return tool is not None and (tool.definition.terminal or tool.runs_last)


def last_in_order(run: Run, calls: Sequence[ToolCall]) -> list[ToolCall]:
    """``calls`` in model order, with terminal (and ``runs_last``) tools' calls moved last."""
    tools = run.tools.by_name
    return sorted(calls, key=lambda c: _runs_last(tools.get(c.name)))


def _halts(run: Run, tool: Tool) -> bool:
    return (
        tool.definition.halts_batch
        or tool.toolset_name is not None
        or tool.name in run.tools.declared
    )


def _group(run: Run) -> OpenGroup:
    group = run.state.group
    assert group is not None, "no tool group is open"
    return group


def _record(
    run: Run, call: ToolCall, result: ToolResult, how: Transition, error: str | None = None
) -> None:
    run.state.group_result(call.id, result)
    run.state.calls.apply(call.id, how, error=error)


async def _finish(
    run: Run,
    call: ToolCall,
    result: ToolResult,
    how: Transition,
    *,
    error: str | None = None,
    preview: ToolCallPreview | None = None,
) -> None:
    _record(run, call, result, how, error)
    state = run.state
    group = state.group
    await run.events.emit(
        ToolCallResultEvent(
            call=call,
            result=result,
            state=state.calls.state(call.id),
            error=error,
            additional_context=group.context.get(call.id) if group is not None else None,
            preview=preview,
        )
    )


async def _reject(
    run: Run,
    call: ToolCall,
    text: str,
    *,
    error: str,
    preview: ToolCallPreview | None = None,
    announce: bool = True,
    failure_hooks_for: Tool | None = None,
) -> None:
    """Answer a call that will not run with an ``is_error`` result (both events emitted).

    With ``failure_hooks_for`` (invalid input), ``post_tool_use_failure`` sees the result.
    """
    if announce:
        await run.events.emit(ToolCallEvent(call=call, preview=preview))
    result = error_result(call, text)
    if failure_hooks_for is not None:
        result = await post_hooks(run, call, failure_hooks_for, result, "reject", error)
        if _halts(run, failure_hooks_for):
            run.state.halt_group()
    await _finish(run, call, result, "reject", error=error)


async def _prepare(run: Run, call: ToolCall) -> Prepared | None:
    tools = run.tools.by_name
    tool = tools.get(call.name)
    if tool is None:
        hint = suggest_tool_names(call.name, tools)
        clause = f" Did you mean: {', '.join(hint)}." if hint else ""
        text = f'Tool "{call.name}" does not exist and was not called.{clause}'
        text += " Call one of the tools declared for this turn."
        await _reject(run, call, text, error=f"UnknownToolError: {call.name}")
        return None
    if _group(run).halted and _halts(run, tool):
        await _reject(run, call, HALTED_TEXT, error="BatchHaltedError")
        return None
    preview = _preview(tool, call)
    await run.events.emit(ToolCallEvent(call=call, preview=preview))
    if call.raw_arguments is not None:
        text = (
            f'Invalid arguments for tool "{call.name}": the input is not a JSON object: '
            f"{call.raw_arguments[:200]}"
        )
        await _reject(
            run, call, text, error="invalid input", announce=False, failure_hooks_for=tool
        )
        return None
    value, err = tool.validate(call.arguments)
    if err is not None:
        await _reject(run, call, err, error="invalid input", announce=False, failure_hooks_for=tool)
        return None
    prepared = Prepared(call=call, tool=tool, input=value, preview=preview)
    if run.config.hooks.pre_tool_use and not await _pre_tool_use(run, prepared):
        return None
    return await _gates(run, prepared)


async def _gates(run: Run, prepared: Prepared) -> Prepared | None:
    """The permission gate, then the approval gate."""
    call, tool = prepared.call, prepared.tool
    denied = _permission_denied(run, tool)
    if denied is not None:
        await _reject(run, call, denied, error="ToolPermissionError", announce=False)
        if _halts(run, tool):
            run.state.halt_group()
        return None
    config = run.config
    default = config.default_approval and prepared.approved is None
    if default and not tool.definition.requires_approval:
        return prepared  # the default policy allows it: no decision to await
    judged = call  # the policy judges the input that will run (a pre_tool_use rewrite)
    if prepared.arguments is not None:
        judged = replace(call, arguments=prepared.arguments)
    decision = await decide(config.approval_policy, tool, judged, prepared.approved)
    if decision.kind == "deny":
        text = decision.message or DENIED_TEXT
        _audit(run, call, decision, text)
        await _reject(run, call, text, error="denied by the approval gate", announce=False)
        return None
    if decision.kind == "ask":
        args = judged.arguments
        prompt = decision.message or f'Approve calling "{call.name}" with {dict(args)}?'
        _audit(run, call, decision, prompt)
        await hold(run, call, prompt, "approval_required", tool, started=False, input=args)
        return None
    _audit(run, call, decision, decision.message)
    return prepared


def _audit(run: Run, call: ToolCall, decision: ApprovalDecision, message: str | None) -> None:
    """Note the gate's decision in the call's record (the turn's audit log)."""
    run.state.calls.note_approval(
        call.id,
        decision=decision.kind,
        decided_by=decision.decided_by or "policy",
        rule=decision.rule,
        message=message,
        at=run.runner.now(),
    )


async def hold(
    run: Run,
    call: ToolCall,
    prompt: str,
    reason: SuspendReason,
    tool: Tool,
    *,
    started: bool,
    metadata: Mapping[str, Any] | None = None,
    input: Mapping[str, Any] | None = None,
) -> None:
    """Record a call that waits for an external result or approval (its result event says so).

    ``input`` is what runs if it is approved (a ``pre_tool_use`` rewrite), by default the
    call's arguments.
    """
    pending = PendingToolCall(
        id=call.id,
        name=call.name,
        input=call.arguments if input is None else input,
        prompt=prompt,
        reason=reason,
        metadata=metadata or {},
        halts_batch=tool.definition.halts_batch,
        started=started,
    )
    await _wait(run, call, pending)


async def _wait(run: Run, call: ToolCall, pending: PendingToolCall) -> None:
    run.state.calls.hold(call.id, pending)
    await run.events.emit(
        ToolCallResultEvent(call=call, result=None, state="waiting", suspension=pending)
    )


def _preview(tool: Tool, call: ToolCall) -> ToolCallPreview | None:
    try:
        return tool.preview(call.arguments)
    except Exception:
        return None


async def _pre_tool_use(run: Run, p: Prepared) -> bool:
    """Run ``pre_tool_use`` hooks; False when the call was denied and answered."""
    ctx = run.hook_context("pre_tool_use")
    ctx.tool, ctx.call = p.tool, p.call
    out = await run_hooks("pre_tool_use", run.config.hooks.pre_tool_use, ctx, run.config.log)
    state = run.state
    state.queue_reminders(ctx.take_reminders())
    p.approved = ctx.approved
    if ctx.additional_context:
        state.group_context(p.call.id, ctx.additional_context)
    if out.denial is not None:
        text = str(out.denial) or type(out.denial).__name__
        await _reject(run, p.call, text, error="denied by pre_tool_use", announce=False)
        return False
    if ctx.updated_input is not None:
        value, err = p.tool.validate(ctx.updated_input)
        if err is not None:
            await _reject(
                run,
                p.call,
                err,
                error="invalid updated input",
                announce=False,
                failure_hooks_for=p.tool,
            )
            return False
        p.input = value
        p.arguments = ctx.updated_input
    return True


def _permission_denied(run: Run, tool: Tool) -> str | None:
    needed = tool.definition.required_permissions
    if not needed:
        return None
    granted = run.config.granted_permissions
    if "*" in granted or needed <= granted:
        return None
    missing = ", ".join(sorted(needed - granted))
    return (
        f'Permission denied: tool "{tool.name}" requires permission(s) {missing} '
        "that this run was not granted."
    )


async def post_hooks(
    run: Run,
    call: ToolCall,
    tool: Tool,
    result: ToolResult,
    how: Transition,
    error: str | None = None,
) -> ToolResult:
    """``post_tool_use`` (or ``_failure``); returns the possibly replaced result.

    On ``HookAbort`` the call's own result is recorded first (``how`` names its ledger
    transition), then the abort propagates; its ``tool_call_result`` event is paid when the
    turn ends.
    """
    failed = result.is_error
    hooks = run.config.hooks
    point = "post_tool_use_failure" if failed else "post_tool_use"
    chosen = hooks.post_tool_use_failure if failed else hooks.post_tool_use
    if not chosen:
        return result
    ctx = run.hook_context(point)
    ctx.tool, ctx.call, ctx.tool_result = tool, call, result
    try:
        await run_hooks(point, chosen, ctx, run.config.log)
    except HookAbort:
        _record(run, call, result, how, error)
        raise
    if ctx.additional_context:
        run.state.group_context(call.id, ctx.additional_context)
    run.state.queue_reminders(ctx.take_reminders())
    return ctx.tool_result if ctx.tool_result is not None else result  # pyright: ignore[reportUnnecessaryComparison]


async def _post(run: Run, p: Prepared, res: ToolOutcome) -> None:
    """Post hooks, then the result event, for a call that ran (a suspension: event only)."""
    if res.pending is not None:
        pending = res.pending
        if p.arguments is not None:  # it waits with the input it ran with (a rewrite)
            pending = replace(pending, input=p.arguments)
        await _wait(run, p.call, pending)
        return
    how: Transition = "time_out" if res.state == "unknown" else "finish"
    failed = res.result.is_error
    result = await post_hooks(run, p.call, p.tool, res.result, how, res.error)
    if failed and _halts(run, p.tool):
        run.state.halt_group()
    if (p.tool.definition.terminal and not failed) or res.terminal:
        run.state.end_with(p.call.id)  # a failed terminal call does not end the turn
    await _finish(run, p.call, result, how, error=res.error, preview=p.preview)


async def _launch(run: Run, calls: Sequence[ToolCall], what: str) -> None:
    """Record calls as starting in a step checkpoint; undo if the checkpoint failed."""
    if not run.setup.durable:
        return
    ledger = run.state.calls
    for c in calls:
        ledger.begin(c.id)
    try:
        await checkpoint_step(run, what)
    except BaseException:
        for c in calls:
            ledger.abort_start(c.id)
        raise


async def _execute(run: Run, p: Prepared) -> None:
    """Start one launched call, run it, and handle its result."""
    run.state.calls.start(p.call.id)
    res = await execute_call(run, p.tool, p.call, p.input)
    await _post(run, p, res)
    if run.setup.durable:
        await checkpoint_step(run, "the step after a tool result")


async def _sequential(run: Run, calls: Sequence[ToolCall]) -> None:
    ledger = run.state.calls
    for call in calls:
        if ledger.waiting:
            return  # a suspension ends the batch: later calls run on resume
        run.check_soft_cancel()
        prepared = await _prepare(run, call)
        if prepared is None:
            continue
        run.check_soft_cancel()
        await _launch(run, [call], f"starting tool call {call.id}")
        await _execute(run, prepared)


async def _parallel(run: Run, calls: Sequence[ToolCall]) -> None:
    """The pooled calls at once, then the held-out ones (terminal, ``runs_last``) in order."""
    tools = run.tools.by_name
    held = [c for c in calls if _runs_last(tools.get(c.name))]
    pooled = [c for c in calls if not _runs_last(tools.get(c.name))]
    await _pool(run, pooled)
    if held:
        await _sequential(run, held)  # returns at once when a pooled call suspended


async def _pool(run: Run, calls: Sequence[ToolCall]) -> None:
    prepared: list[Prepared] = []
    for call in calls:
        run.check_soft_cancel()
        p = await _prepare(run, call)
        if p is not None:
            prepared.append(p)
    run.check_soft_cancel()
    if prepared:
        await _launch(run, [p.call for p in prepared], "launching parallel tool calls")
    limit = asyncio.Semaphore(max(1, run.config.max_tool_concurrency))
    ledger = run.state.calls

    async def one(p: Prepared) -> tuple[Prepared, ToolOutcome | None]:
        async with limit:
            if run.stop_requested:
                return p, None  # abandoned: never started
            ledger.start(p.call.id)
            return p, await execute_call(run, p.tool, p.call, p.input)

    tasks: dict[asyncio.Future[Any], Prepared] = {
        asyncio.ensure_future(one(p)): p for p in prepared
    }
    try:
        for fut in asyncio.as_completed(tasks):
            p, res = await fut
            if res is not None:
                await _post(run, p, res)
                if run.setup.durable:
                    await checkpoint_step(run, "the step after a tool result")
    except BaseException:
        _abandon(run, tasks)
        raise


def _abandon(run: Run, tasks: dict[asyncio.Future[Any], Prepared]) -> None:
    """A stopped batch: keep results already in, hand running calls to the background.

    Results already in are kept without post hooks; running calls get a background handle
    and their tasks are cancelled (not awaited).
    """
    ledger = run.state.calls
    group = _group(run)
    for task, p in tasks.items():
        call = p.call
        if task.done():
            if call.id in group.results or task.cancelled() or task.exception():
                continue
            res: ToolOutcome | None = task.result()[1]
            if res is None:
                continue
            if res.pending is not None:
                ledger.hold(call.id, res.pending)
            else:
                how: Transition = "time_out" if res.state == "unknown" else "finish"
                _record(run, call, res.result, how, res.error)
            continue
        if ledger.phase(call.id) == "running":
            run.hand_to_background(
                BackgroundTaskHandle(
                    task,
                    call,
                    run.state.turn_id,
                    f"{call.name} call still running when its turn ended",
                )
            )
        task.cancel()


async def run_batch(run: Run, calls: Sequence[ToolCall]) -> None:
    """Open the tool group of a response and run its calls.

    The calls that end the turn are in the group's ``ending`` when it closes.
    """
    run.state.open_group(OpenGroup(tuple(calls)))
    await run_calls(run, calls)


async def run_calls(run: Run, calls: Sequence[ToolCall]) -> None:
    """Run ``calls`` (some of the open group), sequentially or in parallel as allowed."""
    tools = run.tools.by_name
    group = _group(run)
    sequential = (
        not run.config.parallel_tool_execution
        or len(calls) < 2
        or any(
            (t := tools.get(c.name)) is not None
            and (t.definition.sequential_only or _halts(run, t))
            for c in group.calls
        )
    )
    if sequential:
        await _sequential(run, last_in_order(run, calls))
    else:
        await _parallel(run, calls)
    if run.state.calls.waiting:
        return  # a suspension is recorded even when a stop was requested meanwhile
    if run.stop_requested and len(group.results) < len(group.calls):
        run.check_soft_cancel()


async def run_approved(
    run: Run, call: ToolCall, arguments: Mapping[str, Any] | None = None
) -> None:
    """Run a call approved at the gate on resume (its hooks and gates already ran).

    ``arguments`` is the input the gate held it with (a ``pre_tool_use`` rewrite), by
    default the call's own.
    """
    tool = run.tools.by_name.get(call.name)
    if tool is None:
        text = f'Tool "{call.name}" is no longer available; it was not run.'
        await _reject(run, call, text, error="UnknownToolError", announce=False)
        return
    value, err = tool.validate(call.arguments if arguments is None else arguments)
    if err is not None:
        await _reject(run, call, err, error="invalid input", announce=False, failure_hooks_for=tool)
        return
    run.check_soft_cancel()
    await _launch(run, [call], f"starting tool call {call.id}")
    await _execute(run, Prepared(call=call, tool=tool, input=value, preview=None))


async def run_answered(
    run: Run, call: ToolCall, pending: PendingToolCall, answer: JSONValue
) -> None:
    """Call a suspended call's tool again with the answer it waited for (``call_again``).

    Its hooks and gates ran when it first started; it runs with the input it suspended with,
    the answer in ``ctx.resumed``. It may suspend again, and then waits for a new answer.
    """
    state = run.state
    tool = run.tools.by_name.get(call.name)
    value: Any = None
    err: str | None = None
    if tool is None:
        err = f'Tool "{call.name}" is no longer available; the answer was not delivered to it.'
    else:
        value, err = tool.validate(pending.input)
    if tool is None or err is not None:
        await _finish(run, call, error_result(call, err or ""), "supply", error=err)
        return
    run.check_soft_cancel()
    state.calls.recall(call.id)
    if run.setup.durable:
        await checkpoint_step(run, f"calling tool call {call.id} again with its answer")
    resumed = ResumedCall(
        answer=answer, prompt=pending.prompt, reason=pending.reason, metadata=pending.metadata
    )
    res = await execute_call(run, tool, call, value, resumed)
    if res.pending is not None:  # asks again: the next answer is a new one, not a conflict
        state.accept({k: v for k, v in state.accepted.items() if k != call.id})
    prepared = Prepared(call=call, tool=tool, input=value, preview=None, arguments=pending.input)
    await _post(run, prepared, res)
    if run.setup.durable:
        await checkpoint_step(run, "the step after a tool result")
