"""Suspend and resume, after the turn boundary.

A tool suspends the turn by returning ``Suspend(...)``; the approval gate suspends it by
holding a call unstarted. The loop then ends ``Suspended`` and the ending writes the
``SuspensionState``.

Resuming (``run(tool_results=...)``, validated before the boundary by ``plan_resume``) does,
in order: accept → ``post_tool_use`` / ``post_tool_use_failure`` per supplied result, in call
order → checkpoint → ``tool_call_result`` events (once per result across partial rounds).
With calls still pending (a partial resume) there is no model call: the turn stays suspended,
the reduced pending set is written before the events, and ``on_suspend`` does not fire
again; a failure returns the stored turn (``ResumeRejected``). Otherwise approved calls,
answered calls whose tool takes the answer itself (``Suspend(call_again=True)``: the tool is
called again with it) and the calls that never started run, in call order, and the loop
goes on.

A ``ToolApproval`` settling a call held at the approval gate is noted in the call's record
(decided by ``resume``), and the approval policy hears of it (``notify_resumed``): that is how
the permission engine learns an "allow for this session" grant.
"""

from __future__ import annotations

from dive.agent._approval import DENIED_TEXT, notify_resumed
from dive.agent._durable import checkpoint_step
from dive.agent._events import ToolCallResultEvent
from dive.agent._resume_plan import ResumePlan
from dive.agent._run import Run
from dive.agent._settle import post_hooks, settle
from dive.agent._toolbatch import last_in_order, run_answered, run_approved, run_calls
from dive.agent._tools import resolve_tools
from dive.turns._engine import Ending, ResumeRejected, Suspended

__all__ = ["resume_group"]


def _settle_held(run: Run, plan: ResumePlan) -> None:
    """Note how this resume settled each gate-held call (the audit log)."""
    for call in plan.calls:
        approval = plan.approvals.get(call.id)
        if approval is None:
            continue
        run.state.calls.note_approval(
            call.id,
            decision="allow" if approval.approved else "deny",
            decided_by="resume",
            message=approval.message if approval.approved else approval.message or DENIED_TEXT,
            at=run.runner.now(),
        )


async def _notify_held(run: Run, plan: ResumePlan) -> None:
    """Tell the approval policy how each held call was settled, once the resume is kept."""
    for call in plan.calls:
        approval = plan.approvals.get(call.id)
        tool = run.tools.by_name.get(call.name)
        if approval is not None and tool is not None:
            await notify_resumed(run.config.approval_policy, tool, call, approval)


async def _accept(run: Run, plan: ResumePlan) -> list[ToolCallResultEvent]:
    """Post hooks for each supplied result, in call order; returns their events."""
    events: list[ToolCallResultEvent] = []
    for call in plan.calls:
        result = plan.supplied.get(call.id)
        if result is None:
            continue
        tool = run.tools.by_name.get(call.name)
        failed = result.is_error  # the supplied result decides, whatever the hooks make of it
        if tool is not None:
            result = await post_hooks(run, call, tool, result, "supply")
        settle(run, call, result, "supply", tool=tool, failed=failed)
        events.append(ToolCallResultEvent(call=call, result=result, state="completed"))
    return events


async def resume_group(run: Run, plan: ResumePlan) -> Ending | None:
    """Apply a resume; an ``Ending`` when the turn stays suspended, else None.

    On None the group's calls are all answered and the group is still open: the loop closes
    it as it closes a batch (the output check, a terminal ending).
    """
    await resolve_tools(run)
    state = run.state
    state.accept(plan.accepted)
    partial = bool(plan.remaining)
    try:
        _settle_held(run, plan)
        events = await _accept(run, plan)
    except Exception as exc:
        if partial:
            return ResumeRejected(error=exc)
        raise
    if partial:  # approved calls stay held (their approval is accepted) until the last answer
        for event in events:
            run.events.defer(event)
        await _notify_held(run, plan)
        return Suspended(new=False)
    held = {i: p.input for i in plan.approved if (p := state.calls.pending(i)) is not None}
    answered = {i: p for i in plan.answers if (p := state.calls.pending(i)) is not None}
    for call_id in plan.approved:
        state.calls.release(call_id)
    await checkpoint_step(run, "resuming with the supplied results")
    await _notify_held(run, plan)  # a grant is learnt only once the resume was written
    for event in events:
        await run.events.emit(event)
    for call in last_in_order(run, plan.calls):
        if call.id in plan.approved:
            await run_approved(run, call, held.get(call.id))
        elif call.id in answered:
            await run_answered(run, call, answered[call.id], plan.answers[call.id])
        elif state.calls.phase(call.id) == "not_started":
            await run_calls(run, [call])
        if state.calls.waiting:
            return Suspended(new=True)
    return None  # the group stays open: the loop closes it like any finished batch
