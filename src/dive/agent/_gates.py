"""The gates a call passes before it runs.

In order: it resolves → the group is not halted for it → ``tool_call`` event → its input
validates → ``pre_tool_use`` → the permission gate → the approval gate (its decision noted in
the call's record; the policy judges the input a ``pre_tool_use`` rewrite gave, and a held
call keeps it).

A call stopped at a gate is answered here with an ``is_error`` result (``reject``); one the
approval gate asks about is held (``approval_required``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dive.agent._approval import DENIED_TEXT, ApprovalDecision, decide
from dive.agent._events import ToolCallEvent
from dive.agent._outputs import error_result
from dive.agent._run import Run
from dive.agent._settle import answer_call, halts, hold, post_hooks
from dive.messages import ToolCall
from dive.tools import Tool, ToolCallPreview, suggest_tool_names
from dive.turns import HALTED_TEXT

__all__ = ["Prepared", "prepare", "reject"]


@dataclass(slots=True)
class Prepared:
    """A call that passed every gate and may run."""

    call: ToolCall
    tool: Tool
    input: Any
    preview: ToolCallPreview | None
    approved: bool | None = None
    arguments: Mapping[str, Any] | None = None  # a pre_tool_use rewrite (what will run)


async def reject(
    run: Run,
    call: ToolCall,
    text: str,
    *,
    error: str,
    preview: ToolCallPreview | None = None,
    announce: bool = True,
    failure_hooks_for: Tool | None = None,
    failed: Tool | None = None,
) -> None:
    """Answer a call that will not run with an ``is_error`` result (both events emitted).

    With ``failure_hooks_for`` (invalid input), ``post_tool_use_failure`` sees the result.
    ``failed`` is the tool of a call that failed rather than was decided against (invalid
    input, a missing permission): a halting tool's failure halts the group.
    """
    if failed is None:
        failed = failure_hooks_for
    if announce:
        await run.events.emit(ToolCallEvent(call=call, preview=preview))
    result = error_result(call, text)
    if failure_hooks_for is not None:
        result = await post_hooks(run, call, failure_hooks_for, result, "reject", error)
    await answer_call(
        run, call, result, "reject", tool=failed, failed=failed is not None, error=error
    )


async def prepare(run: Run, call: ToolCall) -> Prepared | None:
    tools = run.tools.by_name
    tool = tools.get(call.name)
    if tool is None:
        hint = suggest_tool_names(call.name, tools)
        clause = f" Did you mean: {', '.join(hint)}." if hint else ""
        text = f'Tool "{call.name}" does not exist and was not called.{clause}'
        text += " Call one of the tools declared for this turn."
        await reject(run, call, text, error=f"UnknownToolError: {call.name}")
        return None
    group = run.state.group
    if group is not None and group.halted and halts(run, tool):
        await reject(run, call, HALTED_TEXT, error="BatchHaltedError")
        return None
    preview = _preview(tool, call)
    await run.events.emit(ToolCallEvent(call=call, preview=preview))
    if call.raw_arguments is not None:
        text = (
            f'Invalid arguments for tool "{call.name}": the input is not a JSON object: '
            f"{call.raw_arguments[:200]}"
        )
        await reject(run, call, text, error="invalid input", announce=False, failure_hooks_for=tool)
        return None
    value, err = tool.validate(call.arguments)
    if err is not None:
        await reject(run, call, err, error="invalid input", announce=False, failure_hooks_for=tool)
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
        await reject(run, call, denied, error="ToolPermissionError", announce=False, failed=tool)
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
        await reject(run, call, text, error="denied by the approval gate", announce=False)
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


def _preview(tool: Tool, call: ToolCall) -> ToolCallPreview | None:
    try:
        return tool.preview(call.arguments)
    except Exception:
        return None


async def _pre_tool_use(run: Run, p: Prepared) -> bool:
    """Run ``pre_tool_use`` hooks; False when the call was denied and answered."""
    out = await run.hook("pre_tool_use", tool=p.tool, call=p.call)
    state = run.state
    state.transcript.queue_reminders(out.reminders)
    p.approved = out.changed["approved"]
    context: str | None = out.changed["additional_context"]
    if context:
        state.group_context(p.call.id, context)
    if out.denial is not None:
        text = str(out.denial) or type(out.denial).__name__
        await reject(run, p.call, text, error="denied by pre_tool_use", announce=False)
        return False
    updated: dict[str, Any] | None = out.changed["updated_input"]
    if updated is not None:
        value, err = p.tool.validate(updated)
        if err is not None:
            await reject(
                run,
                p.call,
                err,
                error="invalid updated input",
                announce=False,
                failure_hooks_for=p.tool,
            )
            return False
        p.input = value
        p.arguments = updated
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
