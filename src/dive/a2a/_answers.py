"""The answer to an input-required task, as ``tool_results`` for the suspended turn.

A message that answers a task settles the turn's first pending call:

- a call whose tool suspended (``Suspend``, input or auth required) gets the message's
  text as its result;
- a call held for approval is approved by ``yes`` (also ``y``, ``approve``, ``approved``,
  ``allow``, ``ok``; any case) and denied by anything else, the text as the denial message.

A data part ``{"tool_results": {call_id: value}}`` answers calls by id instead (several at
once); for a call held for approval, ``value`` is ``{"approved": bool, "message": ...}`` or a
bool. A data part ``{"approved": bool, "message": ...}`` answers the first pending call's
approval. Calls left unanswered keep the task input-required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from a2a.types import InvalidParamsError
from a2a.types import Message as A2AMessage

from dive.a2a._parts import part_data
from dive.agent import ToolApproval
from dive.turns import PendingToolCall, SuspensionState

__all__ = ["resume_results"]

_YES = frozenset({"yes", "y", "approve", "approved", "allow", "ok"})


def _approval(value: object) -> ToolApproval:
    if isinstance(value, bool):
        return ToolApproval(approved=value)
    if isinstance(value, Mapping) and "approved" in value:
        decision = cast("Mapping[str, Any]", value)
        message: object = decision.get("message")
        return ToolApproval(
            approved=bool(decision["approved"]),
            message=str(message) if message is not None else None,
        )
    text = str(cast("object", value)).strip()
    if text.lower().rstrip(".!") in _YES:
        return ToolApproval(approved=True)
    return ToolApproval(approved=False, message=text or None)


def _for(call: PendingToolCall, value: Any) -> Any:
    return _approval(value) if call.reason == "approval_required" else value


def resume_results(state: SuspensionState, message: A2AMessage) -> dict[str, Any]:
    """``tool_results`` for ``run()`` from the message answering ``state``'s task."""
    pending = {c.id: c for c in state.pending_tool_calls}
    if not pending:
        raise InvalidParamsError(message="the task has no pending call to answer")
    first = state.pending_tool_calls[0]
    texts: list[str] = []
    for part in message.parts:
        if part.HasField("data"):
            data = part_data(part)
            if isinstance(data, dict) and "tool_results" in data:
                return _by_id(pending, data["tool_results"])
            if isinstance(data, dict) and "approved" in data:
                return {first.id: _for(first, data)}
        if part.HasField("text"):
            texts.append(part.text)
    text = "\n".join(texts)
    if not text.strip():
        raise InvalidParamsError(
            message=f"the answer is empty; the task asks: {first.prompt or first.name}"
        )
    return {first.id: _for(first, text)}


def _by_id(pending: Mapping[str, PendingToolCall], given: Any) -> dict[str, Any]:
    if not isinstance(given, dict) or not given:
        raise InvalidParamsError(message="tool_results must map pending call ids to results")
    out: dict[str, Any] = {}
    for call_id, value in given.items():  # pyright: ignore[reportUnknownVariableType]
        call = pending.get(str(call_id))  # pyright: ignore[reportUnknownArgumentType]
        if call is None:
            known = ", ".join(pending)
            raise InvalidParamsError(
                message=f"tool_results names {call_id!r}, which is not pending (pending: {known})"
            )
        out[call.id] = _for(call, value)
    return out
