"""``on_text``: the answer's text as it arrives, for scripts and simple UIs.

Streamed text deltas are passed on as they come. When a model call did not stream (the
model answers in one piece), the text of its message is passed on when the message arrives,
so a handler sees every answer either way. Thinking and tool arguments are not text.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from dive.agent._events import AgentEvent, EventHandler, MessageEvent, ModelStreamEvent
from dive.llm import ContentBlockDelta, TextDelta

__all__ = ["TextHandler", "with_text_handler"]

TextHandler = Callable[[str], Awaitable[None] | None]
"""``fn(text)``, sync or async."""


def with_text_handler(on_event: EventHandler | None, on_text: TextHandler) -> EventHandler:
    """An event handler calling ``on_text`` with text, then ``on_event`` (if any)."""
    streamed = False

    async def handle(event: AgentEvent) -> None:
        nonlocal streamed
        text: str | None = None
        if isinstance(event, ModelStreamEvent):
            raw = event.event
            if isinstance(raw, ContentBlockDelta) and isinstance(raw.delta, TextDelta):
                streamed = True
                text = raw.delta.text
        elif isinstance(event, MessageEvent):
            if not streamed and event.message.role == "assistant":
                text = event.message.text or None
            streamed = False
        if text:
            out = on_text(text)
            if inspect.isawaitable(out):
                await out
        if on_event is not None:
            out = on_event(event)
            if inspect.isawaitable(out):
                await out

    return handle
