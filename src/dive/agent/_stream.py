"""``AgentStream``: ``async for event in agent.stream(...)``, then ``stream.result``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from dive.agent._events import AgentEvent, TurnEndedEvent
from dive.agent._result import RunResult
from dive.errors import UserError

__all__ = ["AgentStream"]

OutputT = TypeVar("OutputT")

_DONE: Any = object()


class AgentStream(Generic[OutputT]):
    """Async iterator of a run's events; ends after ``turn_ended``.

    Events are delivered one at a time: the run waits while the consumer handles each one.
    If the consumer stops iterating early, the run is cancelled (and still closed and saved).
    """

    def __init__(
        self, start: Callable[[Callable[[AgentEvent], Awaitable[None]]], Awaitable[RunResult[Any]]]
    ) -> None:
        self._start = start
        self._queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=1)
        self._task: asyncio.Task[RunResult[Any]] | None = None
        self._result: RunResult[OutputT] | None = None

    async def _handler(self, event: AgentEvent) -> None:
        await self._queue.put(event)

    def __aiter__(self) -> AgentStream[OutputT]:
        if self._task is not None:
            raise UserError("an AgentStream can be iterated only once")
        self._task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> RunResult[Any]:
        try:
            return await self._start(self._handler)
        finally:
            await self._queue.put(_DONE)

    async def __anext__(self) -> AgentEvent:
        item = await self._queue.get()
        if item is _DONE:
            assert self._task is not None
            self._result = await self._task
            raise StopAsyncIteration
        if isinstance(item, TurnEndedEvent):
            pass
        return item

    async def aclose(self) -> None:
        """Stop consuming: cancel the run if it is still going."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            while not self._task.done():
                try:
                    self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    await asyncio.sleep(0)
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result, once the iterator is exhausted."""
        if self._result is None:
            raise UserError("the stream's result is available once iteration has finished")
        return self._result
