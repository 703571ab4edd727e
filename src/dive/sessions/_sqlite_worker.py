"""The SQLite store's worker thread: every operation runs on it, off the event loop."""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Worker"]

T = TypeVar("T")


class Worker:
    """One thread that owns the connection; results come back via ``call_soon_threadsafe``.

    Lighter than ``run_in_executor`` (no concurrent future per call), which matters because
    step checkpoints make several writes per model call.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._loop, name="dive-sqlite", daemon=True
                    )
                    self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, loop, fut = item
            if loop is None:  # posted: nobody waits for the outcome
                try:
                    fn()
                except Exception:
                    pass
                continue
            try:
                value, error = fn(), None
            except BaseException as exc:
                value, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, fut, value, error)
            except RuntimeError:  # the loop closed while we worked
                pass

    async def submit(self, fn: Callable[[], T]) -> T:
        self._ensure()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._queue.put((fn, loop, fut))
        return await fut

    def post(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the thread later; its result and errors are dropped.

        Does nothing once the worker was stopped (posted work is never urgent).
        """
        if self._thread is None:
            return
        self._queue.put((fn, None, None))

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None


def _settle(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)
