"""Tool batch execution: the calls of one model response.

Sequential (the default, and whenever a call is ``sequential_only`` or halting), per call:
check for a stop → check the halted flag → ``tool_call`` event → validate input →
``pre_tool_use`` → permission gate → check soft stop again → execute in a tool span → post
hooks → ``tool_call_result`` event.

Parallel (``parallel_tool_execution=True`` and more than one call): phase 1 prepares each call
in order (events, validation, ``pre_tool_use``, gates); phase 2 runs one task per prepared
call, at most ``max_tool_concurrency`` at once. Results are handled in completion order and
recorded in call order. Every ``tool_call`` event gets exactly one ``tool_call_result``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dive.agent._approval import DENIED_TEXT, decide, default_policy
from dive.agent._background import BackgroundTaskHandle
from dive.agent._close import HALTED_TEXT
from dive.agent._durable import checkpoint_step
from dive.agent._events import ToolCallEvent, ToolCallResultEvent
from dive.agent._exec import ExecResult, execute_call
from dive.agent._hooks import call_hook
from dive.agent._outputs import error_result
from dive.agent._records import CallState, PendingToolCall
from dive.agent._run import TurnRun
from dive.errors import HookAbort
from dive.messages import Message, TextBlock, ToolCall, ToolResult
from dive.tools import SuspendReason, Tool, ToolCallPreview, suggest_tool_names

__all__ = ["Batch", "run_batch"]


@dataclass(slots=True)
class Prepared:
    """A call that passed every gate and may run."""

    call: ToolCall
    tool: Tool
    input: Any
    preview: ToolCallPreview | None
    context: str | None = None
    approved: bool | None = None


@dataclass(slots=True)
class Batch:
    """The calls of one response and what is known about each."""

    calls: tuple[ToolCall, ...]
    states: dict[str, CallState] = field(default_factory=dict[str, CallState])
    results: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])
    context: dict[str, str] = field(default_factory=dict[str, str])
    halted: bool = False
    terminal: bool = False
    announced: set[str] = field(default_factory=set[str])
    emitted: set[str] = field(default_factory=set[str])
    pending: dict[str, PendingToolCall] = field(default_factory=dict[str, PendingToolCall])

    def result_messages(self) -> list[Message]:
        """Recorded results in call order (no additional context)."""
        return [
            Message(role="tool", name=c.name, content=(self.results[c.id],))
            for c in self.calls
            if c.id in self.results
        ]

    def messages(self) -> list[Message]:
        """Result messages in call order (recorded results only), then additional context."""
        out = [
            Message(role="tool", name=c.name, content=(self.results[c.id],))
            for c in self.calls
            if c.id in self.results
        ]
        ctx = [self.context[c.id] for c in self.calls if c.id in self.context]
        if ctx:
            out.append(Message(role="user", content=(TextBlock(text="\n".join(ctx)),)))
        return out


def _halts(run: TurnRun, tool: Tool) -> bool:
    return (
        tool.definition.halts_batch
        or tool.toolset_name is not None
        or tool.name in run.declared_members
    )


async def _finish(
    run: TurnRun,
    batch: Batch,
    call: ToolCall,
    result: ToolResult,
    state: CallState,
    *,
    error: str | None = None,
    preview: ToolCallPreview | None = None,
) -> None:
    batch.results[call.id] = result
    batch.states[call.id] = state
    run.set_call(call, state, error=error)
    batch.emitted.add(call.id)
    await run.emit(
        ToolCallResultEvent(
            call=call,
            result=result,
            state=state,
            error=error,
            additional_context=batch.context.get(call.id),
            preview=preview,
        )
    )


async def _reject(
    run: TurnRun,
    batch: Batch,
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
        batch.announced.add(call.id)
        await run.emit(ToolCallEvent(call=call, preview=preview))
    result = error_result(call, text)
    if failure_hooks_for is not None:
        result = await post_hooks(run, batch, call, failure_hooks_for, result, "completed")
        if _halts(run, failure_hooks_for):
            batch.halted = True
    await _finish(run, batch, call, result, "completed", error=error)


async def _prepare(run: TurnRun, batch: Batch, call: ToolCall) -> Prepared | None:
    tool = run.tools.get(call.name)
    if tool is None:
        hint = suggest_tool_names(call.name, run.tools)
        clause = f" Did you mean: {', '.join(hint)}." if hint else ""
        text = f'Tool "{call.name}" does not exist and was not called.{clause}'
        text += " Call one of the tools declared for this turn."
        await _reject(run, batch, call, text, error=f"UnknownToolError: {call.name}")
        return None
    if batch.halted and _halts(run, tool):
        await _reject(run, batch, call, HALTED_TEXT, error="BatchHaltedError")
        return None
    preview = _preview(tool, call)
    batch.announced.add(call.id)
    await run.emit(ToolCallEvent(call=call, preview=preview))
    if call.raw_arguments is not None:
        text = (
            f'Invalid arguments for tool "{call.name}": the input is not a JSON object: '
            f"{call.raw_arguments[:200]}"
        )
        await _reject(
            run, batch, call, text, error="invalid input", announce=False, failure_hooks_for=tool
        )
        return None
    value, err = tool.validate(call.arguments)
    if err is not None:
        await _reject(
            run, batch, call, err, error="invalid input", announce=False, failure_hooks_for=tool
        )
        return None
    prepared = Prepared(call=call, tool=tool, input=value, preview=preview)
    if run.agent.hooks.pre_tool_use and not await _pre_tool_use(run, batch, prepared):
        return None
    denied = _permission_denied(run, tool)
    if denied is not None:
        await _reject(run, batch, call, denied, error="ToolPermissionError", announce=False)
        if _halts(run, tool):
            batch.halted = True
        return None
    policy = run.agent.approval_policy
    if (
        policy is default_policy
        and prepared.approved is None
        and not tool.definition.requires_approval
    ):
        return prepared  # the default policy allows it: no decision to await
    decision = await decide(policy, tool, call, prepared.approved)
    if decision.kind == "deny":
        text = decision.message or DENIED_TEXT
        await _reject(run, batch, call, text, error="denied by the approval gate", announce=False)
        return None
    if decision.kind == "ask":
        prompt = decision.message or f'Approve calling "{call.name}" with {dict(call.arguments)}?'
        await hold(run, batch, call, prompt, "approval_required", tool, started=False)
        return None
    return prepared


async def hold(
    run: TurnRun,
    batch: Batch,
    call: ToolCall,
    prompt: str,
    reason: SuspendReason,
    tool: Tool,
    *,
    started: bool,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Record a call that waits for an external result or approval (its result event says so)."""
    pending = PendingToolCall(
        id=call.id,
        name=call.name,
        input=call.arguments,
        prompt=prompt,
        reason=reason,
        metadata=metadata or {},
        halts_batch=tool.definition.halts_batch,
        started=started,
    )
    await _wait(run, batch, call, pending)


async def _wait(run: TurnRun, batch: Batch, call: ToolCall, pending: PendingToolCall) -> None:
    batch.pending[call.id] = pending
    batch.states[call.id] = "waiting"
    run.set_call(call, "waiting")
    batch.emitted.add(call.id)
    await run.emit(ToolCallResultEvent(call=call, result=None, state="waiting", suspension=pending))


def _preview(tool: Tool, call: ToolCall) -> ToolCallPreview | None:
    try:
        return tool.preview(call.arguments)
    except Exception:
        return None


async def _pre_tool_use(run: TurnRun, batch: Batch, p: Prepared) -> bool:
    """Run ``pre_tool_use`` hooks; False when the call was denied and answered."""
    ctx = run.hook_context("pre_tool_use")
    ctx.tool, ctx.call = p.tool, p.call
    denial: str | None = None
    for hook in run.agent.hooks.pre_tool_use:
        try:
            await call_hook(hook, ctx)
        except HookAbort as exc:
            exc.hook = "pre_tool_use"
            raise
        except Exception as exc:
            if denial is None:
                denial = str(exc) or type(exc).__name__
    run.take_hook_reminders(ctx)
    p.approved = ctx.approved
    if ctx.additional_context:
        p.context = ctx.additional_context
        batch.context[p.call.id] = ctx.additional_context
    if denial is not None:
        await _reject(run, batch, p.call, denial, error="denied by pre_tool_use", announce=False)
        return False
    if ctx.updated_input is not None:
        value, err = p.tool.validate(ctx.updated_input)
        if err is not None:
            await _reject(
                run,
                batch,
                p.call,
                err,
                error="invalid updated input",
                announce=False,
                failure_hooks_for=p.tool,
            )
            return False
        p.input = value
    return True


def _permission_denied(run: TurnRun, tool: Tool) -> str | None:
    needed = tool.definition.required_permissions
    if not needed:
        return None
    granted = run.agent.granted_permissions
    if "*" in granted or needed <= granted:
        return None
    missing = ", ".join(sorted(needed - granted))
    return (
        f'Permission denied: tool "{tool.name}" requires permission(s) {missing} '
        "that this run was not granted."
    )


async def post_hooks(
    run: TurnRun, batch: Batch, call: ToolCall, tool: Tool, result: ToolResult, state: CallState
) -> ToolResult:
    """``post_tool_use`` (or ``_failure``); returns the possibly replaced result.

    On ``HookAbort`` the call's own result is recorded first (it did run), then the abort
    propagates; its ``tool_call_result`` event is emitted when the batch is closed.
    """
    failed = result.is_error
    hooks = run.agent.hooks.post_tool_use_failure if failed else run.agent.hooks.post_tool_use
    if not hooks:
        return result
    ctx = run.hook_context("post_tool_use_failure" if failed else "post_tool_use")
    ctx.tool, ctx.call, ctx.tool_result = tool, call, result
    for hook in hooks:
        try:
            await call_hook(hook, ctx)
        except HookAbort as exc:
            exc.hook = ctx.hook_point
            batch.results[call.id] = result
            batch.states[call.id] = state
            run.set_call(call, state)
            raise
        except Exception:
            run.agent.log.exception("%s hook failed", ctx.hook_point)
    if ctx.additional_context:
        prev = batch.context.get(call.id)
        batch.context[call.id] = (
            f"{prev}\n{ctx.additional_context}" if prev else ctx.additional_context
        )
    run.take_hook_reminders(ctx)
    return ctx.tool_result if ctx.tool_result is not None else result  # pyright: ignore[reportUnnecessaryComparison]


async def _post(run: TurnRun, batch: Batch, p: Prepared, res: ExecResult) -> None:
    """Post hooks, then the result event, for a call that ran (a suspension: event only)."""
    if res.pending is not None:
        await _wait(run, batch, p.call, res.pending)
        return
    failed = res.result.is_error
    result = await post_hooks(run, batch, p.call, p.tool, res.result, res.state)
    if failed and _halts(run, p.tool):
        batch.halted = True
    if p.tool.definition.terminal:
        batch.terminal = True
    await _finish(run, batch, p.call, result, res.state, error=res.error, preview=p.preview)


async def _sequential(run: TurnRun, batch: Batch, calls: Sequence[ToolCall]) -> None:
    for call in calls:
        if batch.pending:
            return  # a suspension ends the batch: later calls run on resume
        run.check_soft_cancel()
        prepared = await _prepare(run, batch, call)
        if prepared is None:
            continue
        run.check_soft_cancel()
        run.set_call(call, "running")
        try:
            if run.durable:
                await checkpoint_step(run, f"starting tool call {call.id}")
        except BaseException:
            run.set_call(call, "not_started")
            raise
        batch.states[call.id] = "running"
        run.executed_tool_calls += 1
        res = await execute_call(run, prepared.tool, call, prepared.input)
        await _post(run, batch, prepared, res)
        if run.durable:
            await checkpoint_step(run, "the step after a tool result")


async def _parallel(run: TurnRun, batch: Batch, calls: Sequence[ToolCall]) -> None:
    prepared: list[Prepared] = []
    for call in calls:
        run.check_soft_cancel()
        p = await _prepare(run, batch, call)
        if p is not None:
            prepared.append(p)
    run.check_soft_cancel()
    if prepared and run.agent.durability.checkpoint_steps and run.session is not None:
        for p in prepared:
            run.set_call(p.call, "running")  # as recorded: it may start from now on
        try:
            if run.durable:
                await checkpoint_step(run, "launching parallel tool calls")
        except BaseException:
            for p in prepared:
                run.set_call(p.call, "not_started")
            raise
    limit = asyncio.Semaphore(max(1, run.agent.max_tool_concurrency))

    async def one(p: Prepared) -> tuple[Prepared, ExecResult | None]:
        async with limit:
            if run.stop_requested:
                return p, None  # pending → abandoned: never started
            batch.states[p.call.id] = "running"
            run.set_call(p.call, "running")
            run.executed_tool_calls += 1
            return p, await execute_call(run, p.tool, p.call, p.input)

    tasks: dict[asyncio.Future[Any], Prepared] = {
        asyncio.ensure_future(one(p)): p for p in prepared
    }
    try:
        for fut in asyncio.as_completed(tasks):
            p, res = await fut
            if res is not None:
                await _post(run, batch, p, res)
                if run.durable:
                    await checkpoint_step(run, "the step after a tool result")
    except BaseException:
        _abandon(run, batch, tasks)
        raise


def _abandon(run: TurnRun, batch: Batch, tasks: dict[asyncio.Future[Any], Prepared]) -> None:
    """A stopped batch: keep results already in, hand running calls to the background.

    Results already in are kept without post hooks; running calls get a background handle
    and their tasks are cancelled (not awaited).
    """
    for task, p in tasks.items():
        if task.done():
            if p.call.id not in batch.results and not task.cancelled() and not task.exception():
                res = task.result()[1]
                if res is not None:
                    batch.results[p.call.id] = res.result
                    batch.states[p.call.id] = res.state
                    run.set_call(p.call, res.state, error=res.error)
            continue
        if batch.states.get(p.call.id) == "running":
            run.background_tasks.append(
                BackgroundTaskHandle(
                    task,
                    p.call,
                    run.turn_id,
                    f"{p.call.name} call still running when its turn ended",
                )
            )
        task.cancel()


async def run_batch(run: TurnRun, calls: Sequence[ToolCall]) -> Batch:
    """Run the calls of one response; the caller records ``batch.messages()``."""
    batch = Batch(calls=tuple(calls))
    for c in batch.calls:
        batch.states[c.id] = "not_started"
        run.set_call(c, "not_started")
    run.batch = batch
    await run_calls(run, batch, batch.calls)
    return batch


async def run_calls(run: TurnRun, batch: Batch, calls: Sequence[ToolCall]) -> None:
    """Run ``calls`` (some of ``batch``), sequentially or in parallel as the batch allows."""
    tools = run.tools
    sequential = (
        not run.agent.parallel_tool_execution
        or len(calls) < 2
        or any(
            (t := tools.get(c.name)) is not None
            and (t.definition.sequential_only or _halts(run, t))
            for c in batch.calls
        )
    )
    if sequential:
        await _sequential(run, batch, calls)
    else:
        await _parallel(run, batch, calls)
    if batch.pending:
        return  # a suspension is recorded even when a stop was requested meanwhile
    if run.stop_requested and len(batch.results) < len(batch.calls):
        run.check_soft_cancel()


async def run_approved(run: TurnRun, batch: Batch, call: ToolCall) -> None:
    """Run a call approved at the gate on resume (its hooks and gates already ran)."""
    tool = run.tools.get(call.name)
    if tool is None:
        text = f'Tool "{call.name}" is no longer available; it was not run.'
        await _reject(run, batch, call, text, error="UnknownToolError", announce=False)
        return
    value, err = tool.validate(call.arguments)
    if err is not None:
        await _reject(
            run, batch, call, err, error="invalid input", announce=False, failure_hooks_for=tool
        )
        return
    run.check_soft_cancel()
    run.set_call(call, "running")
    try:
        if run.durable:
            await checkpoint_step(run, f"starting tool call {call.id}")
    except BaseException:
        run.set_call(call, "not_started")
        raise
    batch.states[call.id] = "running"
    run.executed_tool_calls += 1
    res = await execute_call(run, tool, call, value)
    await _post(run, batch, Prepared(call=call, tool=tool, input=value, preview=None), res)
    if run.durable:
        await checkpoint_step(run, "the step after a tool result")
