"""Events a run emits, in order, through ``on_event`` or ``agent.stream()``.

Rules: exactly one ``turn_ended`` per invocation that began, always last; every
``tool_call`` gets exactly one ``tool_call_result``; the handler is called one event at a
time, never concurrently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from dive.llm import StreamEvent, Usage
from dive.messages import Message, ToolCall, ToolResult
from dive.tools import ToolCallPreview, ToolProgressEvent, ToolStreamEvent
from dive.turns import CallState, PendingToolCall, Turn

__all__ = [
    "EventHandler",
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
    """A finished assistant message with the usage of the model call that produced it.

    Attributes:
        message: the assistant message.
        usage: the usage of the model call that produced it.
    """

    type: Literal["message"] = "message"
    message: Message
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEvent:
    """A tool call is about to be processed.

    Attributes:
        call: the model's tool call.
        preview: what the call will do, if its tool gives a preview.
    """

    type: Literal["tool_call"] = "tool_call"
    call: ToolCall
    preview: ToolCallPreview | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallResultEvent:
    """The outcome of a tool call: exactly one per ``tool_call`` event.

    Attributes:
        call: the model's tool call.
        result: its result (None when it suspended).
        state: the call's state (``completed``, ``waiting``, ``unknown``, ``not_started``).
        error: the call's error text, if it failed.
        additional_context: hook text that follows the result, if any.
        suspension: what the suspension reports about the call, if it suspended.
        preview: what the call did, if its tool gives a preview.
        background: the :class:`BackgroundTaskHandle` of work that moved to the background.
    """

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
    """A raw stream delta, Anthropic-shaped for every provider.

    Attributes:
        event: the stream event.
    """

    type: Literal["model_event"] = "model_event"
    event: StreamEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEndedEvent:
    """The terminal event: the turn record as written.

    Attributes:
        turn: the turn's record.
    """

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


EventHandler = Callable[[AgentEvent], Awaitable[None] | None]
"""An ``on_event`` handler: called with every event, sync or async."""
