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
from dataclasses import replace
from typing import Any

from dive.agent._background import BackgroundTaskHandle
from dive.agent._durable import checkpoint_step
from dive.agent._exec import execute_call
from dive.agent._gates import Prepared, prepare, reject
from dive.agent._outputs import error_result
from dive.agent._run import Run
from dive.agent._runner import ToolOutcome
from dive.agent._settle import answer_call, halts, post_hooks, settle, wait
from dive.messages import JSONValue, ToolCall
from dive.tools import ResumedCall, Tool
from dive.turns import PendingToolCall
from dive.turns._engine import OpenGroup, Transition

__all__ = ["last_in_order", "run_answered", "run_approved", "run_batch", "run_calls"]


def _runs_last(tool: Tool | None) -> bool:
    return tool is not None and (tool.definition.terminal or tool.runs_last)


def last_in_order(run: Run, calls: Sequence[ToolCall]) -> list[ToolCall]:
    """``calls`` in model order, with terminal (and ``runs_last``) tools' calls moved last."""
    tools = run.tools.by_name
    return sorted(calls, key=lambda c: _runs_last(tools.get(c.name)))


async def _post(run: Run, p: Prepared, res: ToolOutcome) -> None:
    """Post hooks, then the result event, for a call that ran (a suspension: event only)."""
    if res.pending is not None:
        pending = res.pending
        if p.arguments is not None:  # it waits with the input it ran with (a rewrite)
            pending = replace(pending, input=p.arguments)
        await wait(run, p.call, pending)
        return
    how: Transition = "time_out" if res.state == "unknown" else "finish"
    failed = res.result.is_error  # the tool's own result decides, whatever the hooks make of it
    result = await post_hooks(run, p.call, p.tool, res.result, how, res.error)
    await answer_call(
        run,
        p.call,
        result,
        how,
        tool=p.tool,
        failed=failed,
        terminal=res.terminal,
        error=res.error,
        preview=p.preview,
    )


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
        if run.cancel is not None:
            run.check_soft_cancel()
        prepared = await prepare(run, call)
        if prepared is None:
            continue
        if run.cancel is not None:
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
        if run.cancel is not None:
            run.check_soft_cancel()
        p = await prepare(run, call)
        if p is not None:
            prepared.append(p)
    if run.cancel is not None:
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
    group = run.state.group
    assert group is not None, "no tool group is open"
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
                settle(run, call, res.result, how, error=res.error)
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
    group = run.state.group
    assert group is not None, "no tool group is open"
    sequential = (
        not run.config.parallel_tool_execution
        or len(calls) < 2
        or any(
            (t := tools.get(c.name)) is not None and (t.definition.sequential_only or halts(run, t))
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
        await reject(run, call, text, error="UnknownToolError", announce=False)
        return
    value, err = tool.validate(call.arguments if arguments is None else arguments)
    if err is not None:
        await reject(run, call, err, error="invalid input", announce=False, failure_hooks_for=tool)
        return
    if run.cancel is not None:
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
        await answer_call(run, call, error_result(call, err or ""), "supply", error=err)
        return
    if run.cancel is not None:
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
