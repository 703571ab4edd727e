"""Suspend and resume.

A tool suspends the turn by returning ``Suspend(...)``; the approval gate suspends it by
holding a call unstarted. The run returns ``status="suspended"`` with ``turn.suspension``.

Resuming (``run(tool_results={call_id: result})``, from the session or statelessly from a
saved ``SuspensionState``) does, in order:

1. validate the ids: an id not in the turn raises ``UnknownToolCallError``; an id whose call
   is not pending raises ``ToolCallNotPendingError`` — unless its result was already accepted
   and is JSON-equal (skipped: idempotent re-submission) or differs
   (``ConflictingToolResultError``). Nothing changes on error;
2. accept → ``post_tool_use`` / ``post_tool_use_failure`` per supplied result, in call order →
   checkpoint → ``tool_call_result`` events (once per result across partial rounds);
3. with calls still pending (partial resume): no model call, the turn stays suspended (the
   reduced pending set is written before the events; ``on_suspend`` does not fire again);
4. otherwise run approved calls and the calls that never started, in call order, and continue
   the loop.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from dive.agent._approval import DENIED_TEXT, ToolApproval
from dive.agent._events import ToolCallResultEvent
from dive.agent._loop import Ending
from dive.agent._outputs import to_tool_result
from dive.agent._records import PendingToolCall, SuspensionState
from dive.agent._run import TurnRun
from dive.agent._toolbatch import Batch, post_hooks, run_approved, run_calls
from dive.errors import (
    ConflictingToolResultError,
    DiveError,
    InvalidRunError,
    ToolCallNotPendingError,
    UnknownToolCallError,
)
from dive.messages import Message, TextBlock, ToolCall, ToolResult
from dive.messages._codec import JSONValue, to_jsonable
from dive.tools import Background, Suspend

__all__ = [
    "ResumeInfo",
    "build_suspension",
    "plan_resume",
    "resume_batch",
    "split_turn_messages",
    "suspend",
]


class PartialResumeFailed(DiveError):
    """A partial resume failed; the stored turn stays suspended.

    Results already written stay accepted.
    """

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause) or repr(cause))
        self.cause = cause


@dataclass(slots=True)
class ResumeInfo:
    """A validated resume: what was supplied and what remains."""

    calls: tuple[ToolCall, ...]
    results: dict[str, ToolResult]
    pending: dict[str, PendingToolCall]
    supplied: dict[str, ToolResult] = field(default_factory=dict[str, ToolResult])
    approved: set[str] = field(default_factory=set[str])
    accepted: dict[str, JSONValue] = field(default_factory=dict[str, JSONValue])
    context: dict[str, str] = field(default_factory=dict[str, str])
    halted: bool = False

    @property
    def remaining(self) -> dict[str, PendingToolCall]:
        """Pending calls no result was supplied for."""
        return {
            k: v
            for k, v in self.pending.items()
            if k not in self.supplied and k not in self.approved
        }


def split_turn_messages(
    messages: tuple[Message, ...],
) -> tuple[list[Message], dict[str, ToolResult]]:
    """The messages up to the suspended batch's call message, and its recorded results."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant" and messages[i].tool_calls:
            results = {
                r.tool_call_id: r for m in messages[i + 1 :] if (r := m.tool_result) is not None
            }
            return list(messages[: i + 1]), results
    raise InvalidRunError("the suspension state has no tool-call message to resume")


def _as_json(value: Any) -> JSONValue:
    if isinstance(value, ToolApproval):
        return {"approved": value.approved, "message": value.message}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    try:
        return json.loads(json.dumps(to_jsonable(value)))
    except (TypeError, ValueError) as exc:
        raise InvalidRunError(f"tool result {value!r} is not JSON-serializable: {exc}") from None


def _convert(call: ToolCall, pending: PendingToolCall, value: Any, info: ResumeInfo) -> None:
    if isinstance(value, ToolApproval):
        if not pending.started:  # held at the gate
            if value.approved:
                info.approved.add(call.id)
                return
            text = value.message or DENIED_TEXT
            info.supplied[call.id] = ToolResult(
                tool_call_id=call.id, name=call.name, content=(TextBlock(text=text),), is_error=True
            )
            return
        payload: dict[str, JSONValue] = {"approved": value.approved, "message": value.message}
        info.supplied[call.id] = ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=(TextBlock(text=json.dumps(payload)),),
            structured=payload,
            is_error=not value.approved,
        )
        return
    info.supplied[call.id] = to_tool_result(call, value)


def plan_resume(state: SuspensionState, tool_results: Mapping[str, Any]) -> ResumeInfo:
    """Validate ``tool_results`` against the suspension; raise before anything changes."""
    if not tool_results:
        raise InvalidRunError("tool_results is empty: pass at least one {call_id: result}")
    _, results = split_turn_messages(state.turn_messages)
    calls = next(m for m in reversed(state.turn_messages) if m.tool_calls).tool_calls
    by_id = {c.id: c for c in calls}
    pending = {p.id: p for p in state.pending_tool_calls}
    info = ResumeInfo(
        calls=calls,
        results=results,
        pending=pending,
        accepted=dict(state.accepted),
        context=dict(state.context),
        halted=state.batch_halted,
    )
    for call_id, value in tool_results.items():
        if isinstance(value, Suspend | Background):
            raise InvalidRunError(
                f"tool_results[{call_id!r}] is a {type(value).__name__}; supply a result or a "
                "ToolApproval"
            )
        if call_id not in by_id:
            raise UnknownToolCallError(
                f"tool call {call_id!r} is not part of suspended turn {state.turn_id}; its "
                f"calls are {', '.join(sorted(by_id))}"
            )
        as_json = _as_json(value)
        if call_id in info.accepted:
            if info.accepted[call_id] == as_json:
                continue  # an identical re-submission: already accepted
            raise ConflictingToolResultError(
                f"a different result for tool call {call_id!r} was already accepted"
            )
        if call_id not in pending:
            raise ToolCallNotPendingError(
                f"tool call {call_id!r} is not waiting for a result (pending: "
                f"{', '.join(sorted(pending)) or 'none'})"
            )
        info.accepted[call_id] = as_json
        _convert(by_id[call_id], pending[call_id], value, info)
    return info


async def _accept(run: TurnRun, batch: Batch, info: ResumeInfo) -> list[ToolCallResultEvent]:
    """Post hooks for each supplied result, in call order; returns their (owed) events."""
    events: list[ToolCallResultEvent] = []
    for call in info.calls:
        result = info.supplied.get(call.id)
        if result is None:
            continue
        tool = run.tools.get(call.name)
        if tool is not None:
            result = await post_hooks(run, batch, call, tool, result, "completed")
            if result.is_error and (tool.definition.halts_batch or tool.toolset_name):
                batch.halted = True
        batch.results[call.id] = result
        batch.states[call.id] = "completed"
        batch.pending.pop(call.id, None)
        run.set_call(call, "completed")
        batch.emitted.add(call.id)
        events.append(ToolCallResultEvent(call=call, result=result, state="completed"))
    return events


def _batch_for(run: TurnRun, info: ResumeInfo) -> Batch:
    batch = Batch(calls=info.calls, context=dict(info.context), halted=info.halted)
    for c in info.calls:
        if c.id in info.results:
            batch.results[c.id] = info.results[c.id]
            batch.states[c.id] = "completed"
        elif c.id in info.pending:
            batch.pending[c.id] = info.pending[c.id]
            batch.states[c.id] = "waiting"
        else:
            batch.states[c.id] = "not_started"
    batch.emitted.update(info.results)
    return batch


async def resume_batch(run: TurnRun, info: ResumeInfo) -> Ending | None:
    """Apply a resume; an ``Ending`` when the turn stays suspended, else None (continue)."""
    from dive.agent._durable import checkpoint_step
    from dive.agent._tools import resolve_tools

    await resolve_tools(run)
    batch = _batch_for(run, info)
    for c in info.calls:
        run.set_call(c, batch.states[c.id])
    run.batch = batch
    run.accepted = info.accepted
    if info.remaining:
        try:
            events = await _accept(run, batch, info)
        except Exception as exc:
            raise PartialResumeFailed(exc) from exc
    else:
        events = await _accept(run, batch, info)
    for call_id in info.approved:
        batch.pending.pop(call_id, None)
    if info.remaining:
        run.deferred_events = list(events)
        return suspend(run, batch, new=False)
    await checkpoint_step(run, "resuming with the supplied results")
    for event in events:
        await run.emit(event)
    for call in info.calls:
        if call.id in info.approved:
            await run_approved(run, batch, call)
        elif batch.states.get(call.id) == "not_started":
            await run_calls(run, batch, [call])
        if batch.pending:
            break
    if batch.pending:
        return suspend(run, batch, new=True)
    for m in batch.messages():
        run.add(m)
    run.batch = None
    return None


def suspend(run: TurnRun, batch: Batch, *, new: bool) -> Ending:
    """End the loop suspended, keeping the batch (its results are recorded at the end)."""
    run.suspended_batch = batch
    run.new_suspension = new
    run.batch = None
    return Ending(status="suspended")


def build_suspension(run: TurnRun, batch: Batch) -> SuspensionState:
    """The ``SuspensionState`` of a suspended batch (JSON round-trippable)."""
    return SuspensionState(
        turn_id=run.turn_id,
        pending_tool_calls=tuple(batch.pending[c.id] for c in batch.calls if c.id in batch.pending),
        completed_tool_calls=tuple(c.id for c in batch.calls if c.id in batch.results),
        turn_messages=tuple(run.record),
        batch_halted=batch.halted,
        usage=run.turn_usage,
        origin=run.origin,
        accepted=dict(run.accepted),
        context=dict(batch.context),
        model_calls=run.model_calls,
        executed_tool_calls=run.executed_tool_calls,
    )
