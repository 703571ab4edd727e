"""The one author of a call's answer: its result and state together, under the batch rules.

Every call of a tool group is answered here — run, rejected at a gate, supplied on resume,
or kept when its batch was stopped — through :meth:`TurnState.settle`, which writes the
group's result and the ledger's state in one step. The two batch rules live here only, for
live batches and resume alike:

- **halting**: a call of a halting tool (``halts_batch``, a toolset's member, a declared
  member) that *failed* — its tool's own result was an error, its input was invalid, or it
  lacked a permission — stops the group's later halting calls. A call the approval gate or a
  ``pre_tool_use`` hook denied was decided, not failed: it halts nothing.
- **terminal**: a call of a ``terminal`` tool that succeeded, or a tool that returned
  ``ToolReturn(terminal=True)``, ends the turn once the group is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dive.agent._events import ToolCallResultEvent
from dive.agent._run import Run
from dive.errors import HookAbort
from dive.messages import ToolCall, ToolResult
from dive.tools import SuspendReason, Tool, ToolCallPreview
from dive.turns import PendingToolCall
from dive.turns._engine import Transition

__all__ = ["answer_call", "halts", "hold", "post_hooks", "settle", "wait"]


def halts(run: Run, tool: Tool) -> bool:
    """True if a failure of ``tool``'s call stops the group's later halting calls."""
    return (
        tool.definition.halts_batch
        or tool.toolset_name is not None
        or tool.name in run.tools.declared
    )


def settle(
    run: Run,
    call: ToolCall,
    result: ToolResult,
    how: Transition,
    *,
    tool: Tool | None = None,
    failed: bool = False,
    terminal: bool = False,
    error: str | None = None,
) -> None:
    """Write ``call``'s answer and state; apply the batch rules (see the module docstring).

    ``failed``: the call failed (its tool's own result before post hooks, invalid input, a
    missing permission). ``terminal``: the tool returned ``ToolReturn(terminal=True)``.
    """
    halt = failed and tool is not None and halts(run, tool)
    end = terminal or (not failed and tool is not None and tool.definition.terminal)
    run.state.settle(call.id, result, how, error=error, halt=halt, end=end)


async def answer_call(
    run: Run,
    call: ToolCall,
    result: ToolResult,
    how: Transition,
    *,
    tool: Tool | None = None,
    failed: bool = False,
    terminal: bool = False,
    error: str | None = None,
    preview: ToolCallPreview | None = None,
) -> None:
    """``settle``, then the call's ``tool_call_result`` event."""
    settle(run, call, result, how, tool=tool, failed=failed, terminal=terminal, error=error)
    group = run.state.group
    await run.events.emit(
        ToolCallResultEvent(
            call=call,
            result=result,
            state=run.state.calls.state(call.id),
            error=error,
            additional_context=group.context.get(call.id) if group is not None else None,
            preview=preview,
        )
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
    await wait(run, call, pending)


async def wait(run: Run, call: ToolCall, pending: PendingToolCall) -> None:
    """The call waits (held at the gate, or suspended by its tool): ledger, then event."""
    run.state.calls.hold(call.id, pending)
    await run.events.emit(
        ToolCallResultEvent(call=call, result=None, state="waiting", suspension=pending)
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
    if not (hooks.post_tool_use_failure if failed else hooks.post_tool_use):
        return result
    try:
        out = await run.hook(
            "post_tool_use_failure" if failed else "post_tool_use",
            tool=tool,
            call=call,
            tool_result=result,
        )
    except HookAbort:
        settle(run, call, result, how, error=error)
        raise
    context: str | None = out.changed["additional_context"]
    if context:
        run.state.group_context(call.id, context)
    run.state.transcript.queue_reminders(out.reminders)
    replaced: ToolResult | None = out.changed["tool_result"]
    return replaced if replaced is not None else result
