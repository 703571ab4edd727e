"""Events a run emits, in order, through ``on_event`` or ``agent.stream()``.

Rules: exactly one ``turn_ended`` per invocation that began, always last; every
``tool_call`` gets exactly one ``tool_call_result``; the handler is called one event at a
time, never concurrently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from dive.llm import StreamEvent, Usage
from dive.messages import Message, ToolCall, ToolResult
from dive.tools import ToolCallPreview, ToolProgressEvent, ToolStreamEvent
from dive.turns import CallState, PendingToolCall, Turn

__all__ = [
    "AgentEvent",
    "MessageEvent",
    "ModelStreamEvent",
    "ToolCallEvent",
    "ToolCallResultEvent",
    "ToolProgressEvent",
    "ToolStreamEvent",
    "TurnEndedEvent",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageEvent:
    """A finished assistant message with the usage of the model call that produced it."""

    type: Literal["message"] = "message"
    message: Message
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call is about to be processed."""

    type: Literal["tool_call"] = "tool_call"
    call: ToolCall
    preview: ToolCallPreview | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResultEvent:
    """The outcome of a tool call: exactly one per ``tool_call`` event."""

    type: Literal["tool_call_result"] = "tool_call_result"
    call: ToolCall
    result: ToolResult | None
    state: CallState
    error: str | None = None
    additional_context: str | None = None
    suspension: PendingToolCall | None = None
    preview: ToolCallPreview | None = None
    background: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStreamEvent:
    """A raw stream delta, Anthropic-shaped for every provider."""

    type: Literal["model_event"] = "model_event"
    event: StreamEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEndedEvent:
    """The terminal event: the turn record as written."""

    type: Literal["turn_ended"] = "turn_ended"
    turn: Turn


AgentEvent = (
    MessageEvent
    | ToolCallEvent
    | ToolCallResultEvent
    | ModelStreamEvent
    | ToolStreamEvent
    | ToolProgressEvent
    | TurnEndedEvent
)
