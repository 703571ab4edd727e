"""``EventSink``: the one delivery path of a run's events.

It keeps ``result.items``, calls the handler one event at a time, and tracks which announced
calls (``tool_call`` emitted) still owe their ``tool_call_result``, so the ending can pay
them. Events of a partial resume are deferred until after the write.
"""

from __future__ import annotations

import asyncio
import inspect
import logging

from dive.agent._events import AgentEvent, EventHandler, ToolCallEvent, ToolCallResultEvent
from dive.errors import EventHandlerError
from dive.messages import ToolCall

__all__ = ["EventHandler", "EventSink"]


class EventSink:
    """Records and delivers events; a handler failure raises ``EventHandlerError``."""

    __slots__ = ("_deferred", "_handler", "_items", "_lock", "_owed")

    def __init__(self, handler: EventHandler | None) -> None:
        self._handler = handler
        self._items: list[AgentEvent] = []
        self._owed: dict[str, ToolCall] = {}
        self._deferred: list[AgentEvent] = []
        self._lock: asyncio.Lock | None = None

    @property
    def listening(self) -> bool:
        """True when a handler receives events."""
        return self._handler is not None

    @property
    def items(self) -> tuple[AgentEvent, ...]:
        """Every event emitted so far (raw deltas excluded)."""
        return tuple(self._items)

    async def emit(self, event: AgentEvent) -> None:
        """Record and deliver an event."""
        if isinstance(event, ToolCallEvent):
            self._owed[event.call.id] = event.call
        elif isinstance(event, ToolCallResultEvent):
            self._owed.pop(event.call.id, None)
        self._items.append(event)
        if self._handler is not None:
            await self.deliver(event)

    async def deliver(self, event: AgentEvent) -> None:
        """Deliver an event to the handler without recording it (raw deltas)."""
        handler = self._handler
        if handler is None:
            return
        try:
            out = handler(event)
            if inspect.isawaitable(out):
                await out
        except Exception as exc:
            raise EventHandlerError(f"the on_event handler raised: {exc!r}") from exc

    async def emit_serialized(self, event: AgentEvent) -> None:
        """``emit`` for events from concurrently running tools: one at a time."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self.emit(event)

    async def emit_quietly(
        self, event: AgentEvent, what: str, log: logging.Logger
    ) -> BaseException | None:
        """Emit where a handler failure must not change the ending; it is logged."""
        try:
            await self.emit(event)
        except Exception as exc:
            log.exception("the on_event handler failed on %s", what)
            return exc
        return None

    def owed(self) -> list[ToolCall]:
        """Announced calls whose ``tool_call_result`` was not emitted yet, in order."""
        return list(self._owed.values())

    def defer(self, event: AgentEvent) -> None:
        """Hold an event until after the turn's write (a partial resume's results)."""
        self._deferred.append(event)

    def take_deferred(self) -> list[AgentEvent]:
        """The deferred events, once."""
        out, self._deferred = self._deferred, []
        return out
