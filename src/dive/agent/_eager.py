"""Start a coroutine at once; hand it to a task only if it has to wait.

A step checkpoint on the SQLite store usually completes without waiting (the inline
connection): wrapping every write in a task costs a task, an event-loop pass and a timer
for nothing. :func:`start` runs the coroutine until it first waits; if it finished, the
result is a done future, otherwise the rest runs in a task exactly as if it had been one
from the start (what asyncio's eager tasks do from Python 3.12 on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["start"]

T = TypeVar("T")


class _Wait:
    """Re-yield what the coroutine yielded, so the task waits on it as the coroutine did."""

    __slots__ = ("_yielded",)

    def __init__(self, yielded: Any) -> None:
        self._yielded = yielded

    def __await__(self) -> Generator[Any, None, None]:
        yield self._yielded


async def _rest(coro: Coroutine[Any, Any, T], yielded: Any) -> T:
    while True:
        try:
            await _Wait(yielded)
        except BaseException as exc:  # the task was cancelled (or its future failed)
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                yielded = coro.send(None)
            except StopIteration as stop:
                return stop.value


def start(coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """Run ``coro`` until it first waits: a done future if it finished, else its task."""
    loop = asyncio.get_running_loop()
    try:
        yielded = coro.send(None)
    except StopIteration as stop:
        done: asyncio.Future[T] = loop.create_future()
        done.set_result(stop.value)
        return done
    except Exception as exc:  # anything else (a cancellation) propagates as from an await
        failed: asyncio.Future[T] = loop.create_future()
        failed.set_exception(exc)
        return failed
    return asyncio.ensure_future(_rest(coro, yielded))
