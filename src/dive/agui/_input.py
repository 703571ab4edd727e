"""What an AG-UI ``RunAgentInput`` asks of the agent, in dive's terms.

Messages: user, assistant (text and tool calls) and tool messages become dive messages, ids
kept; system, developer, activity and reasoning messages are left out (the agent has its own
instructions). Resume entries answer pending calls by id (the interrupt id is the call id):

- an approval (``approval_required``): payload ``true``/``false``, or ``{"approved": bool,
  "message": str}``; a ``cancelled`` entry denies the call;
- any other pending call: the payload is the call's result (text or JSON); a ``cancelled``
  entry answers it with an error saying the user cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ag_ui.core import (
    AssistantMessage,
    ResumeEntry,
    TextPart,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import Message as AGUIMessage

from dive.agent import ToolApproval
from dive.errors import UserError
from dive.messages import ContentBlock, Message, TextBlock, ToolCall, ToolResult
from dive.tools import ToolReturn
from dive.turns import PendingToolCall

__all__ = ["CANCELLED_TEXT", "dive_messages", "resume_results", "user_content"]

CANCELLED_TEXT = "The user cancelled this request."


def user_content(message: UserMessage) -> tuple[ContentBlock, ...]:
    """The content blocks of a user message (text parts; other parts are refused)."""
    if isinstance(message.content, str):
        return (TextBlock(text=message.content),)
    blocks: list[ContentBlock] = []
    for part in message.content:
        if not isinstance(part, TextPart):
            raise UserError(
                f"message {message.id}: {part.type} parts are not supported yet; send text"
            )
        blocks.append(TextBlock(text=part.text))
    return tuple(blocks)


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value: object = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        return {}
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def dive_messages(messages: Sequence[AGUIMessage]) -> list[Message]:
    """The conversation as dive messages (see the module docstring)."""
    out: list[Message] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(Message(role="user", content=user_content(m), id=m.id))
        elif isinstance(m, AssistantMessage):
            blocks: list[ContentBlock] = [TextBlock(text=m.content)] if m.content else []
            for c in m.tool_calls or ():
                blocks.append(
                    ToolCall(
                        id=c.id, name=c.function.name, arguments=_arguments(c.function.arguments)
                    )
                )
            out.append(Message(role="assistant", content=tuple(blocks), id=m.id))
        elif isinstance(m, ToolMessage):
            text = m.content if isinstance(m.content, str) else _texts(m.content)
            result = ToolResult(
                tool_call_id=m.tool_call_id,
                content=(TextBlock(text=text),),
                is_error=m.error is not None,
            )
            out.append(Message(role="tool", content=(result,), id=m.id))
    return out


def _texts(parts: Sequence[Any]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def _approval(payload: Any) -> ToolApproval:
    if isinstance(payload, bool):
        return ToolApproval(approved=payload)
    if isinstance(payload, Mapping) and "approved" in payload:
        decision = cast("Mapping[str, Any]", payload)
        message: object = decision.get("message")
        return ToolApproval(
            approved=bool(decision["approved"]),
            message=str(message) if message is not None else None,
        )
    raise UserError(
        'an approval is answered with true, false or {"approved": bool, "message": "..."}'
    )


def resume_results(
    pending: Sequence[PendingToolCall], entries: Sequence[ResumeEntry]
) -> dict[str, Any]:
    """``tool_results`` for ``run()`` from the resume entries (see the module docstring)."""
    calls = {c.id: c for c in pending}
    out: dict[str, Any] = {}
    for entry in entries:
        call = calls.get(entry.interrupt_id)
        if call is None:
            known = ", ".join(calls) or "none"
            raise UserError(
                f"resume entry {entry.interrupt_id!r} answers no open interrupt (open: {known})"
            )
        approval = call.reason == "approval_required"
        if entry.status == "cancelled":
            out[call.id] = (
                ToolApproval(approved=False, message=CANCELLED_TEXT)
                if approval
                else ToolReturn(content=CANCELLED_TEXT, is_error=True)
            )
        elif approval:
            out[call.id] = _approval(entry.payload)
        else:
            payload = entry.payload
            out[call.id] = "" if payload is None else payload
    return out
