"""Group commit for PostgreSQL step appends.

Step checkpoints from many sessions arrive at once under load. Each would be its own
round trip and its own commit; instead, appends that arrive while one batch is in flight
wait for the next, and a batch is one statement in one transaction: every session's
revision is advanced only where it is still where this store left it, and a step row is
inserted for each session that moved. A lone append goes out at once, so a single session
sees one round trip as before.

If a batch fails, each of its appends is retried on its own, so one bad append fails only
its own checkpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dive.errors import StoreUnavailableError
from dive.sessions._steps import Delta

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["StepBatcher"]

_NOW = "extract(epoch from clock_timestamp())"

_BATCH = (
    "WITH input AS (SELECT * FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[], "
    "%s::text[]) AS i(session_id, base, seq, step, data)), "
    "moved AS (UPDATE dive_sessions s SET revision = i.base + 1, "
    f"updated_at = {_NOW}, suspended = false FROM input i "
    "WHERE s.id = i.session_id AND s.revision = i.base RETURNING s.id) "
    "INSERT INTO dive_steps (session_id, seq, step, revision, data) "
    "SELECT i.session_id, i.seq, i.step, i.base + 1, i.data FROM input i "
    "JOIN moved m ON m.id = i.session_id RETURNING session_id"
)

Connect = Callable[[str | None], AbstractAsyncContextManager["AsyncConnection[Any]"]]


@dataclass(slots=True)
class _Append:
    session_id: str
    step: Delta
    done: asyncio.Future[int | None]


class StepBatcher:
    """Queues step appends and writes them in batches; one per store and event loop."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._queue: dict[str, _Append] = {}
        self._waiting: list[_Append] = []
        self._task: asyncio.Task[None] | None = None
        self._inflight: list[_Append] = []

    async def append(self, session_id: str, step: Delta) -> int | None:
        """Append ``step``; the new revision, or None if the session moved on."""
        loop = asyncio.get_running_loop()
        item = _Append(session_id, step, loop.create_future())
        self._enqueue(item)
        if self._task is None:
            self._task = loop.create_task(self._drain())
        return await item.done

    def _enqueue(self, item: _Append) -> None:
        if item.session_id in self._queue:
            self._waiting.append(item)  # goes in the batch after its sibling's
        else:
            self._queue[item.session_id] = item

    async def _drain(self) -> None:
        try:
            while self._queue:
                # a caller that gave up before its batch went out is not written
                batch = [i for i in self._queue.values() if not i.done.cancelled()]
                self._queue = {}
                held, self._waiting = self._waiting, []
                for item in held:
                    self._enqueue(item)
                if batch:
                    self._inflight = batch
                    await self._write(batch)
                    self._inflight = []
        except BaseException as exc:  # cancelled or interrupted: nobody may wait forever
            error = StoreUnavailableError(
                f"the step write was abandoned ({exc!r}); whether it landed is unknown. Reload "
                "the session and retry."
            )
            for item in [*self._inflight, *self._queue.values(), *self._waiting]:
                _settle(item.done, error)
            self._queue, self._waiting, self._inflight = {}, [], []
            raise
        finally:
            self._task = None

    async def _write(self, batch: list[_Append]) -> None:
        try:
            moved = await self._run(batch)
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0].done, exc)
                return
            await asyncio.gather(*(self._write([item]) for item in batch))
            return
        for item in batch:
            base = item.step.base
            _settle(item.done, base.revision + 1 if item.session_id in moved else None)

    async def _run(self, batch: list[_Append]) -> set[str]:
        columns: tuple[list[Any], ...] = ([], [], [], [], [])
        for item in batch:
            base = item.step.base
            row = (item.session_id, base.revision, base.seq, base.steps + 1, item.step.data)
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        where = batch[0].session_id if len(batch) == 1 else None
        async with self._connect(where) as conn:
            cur = await conn.execute(_BATCH, columns, binary=True)
            return {str(row[0]) for row in await cur.fetchall()}


def _settle(fut: asyncio.Future[int | None], outcome: int | Exception | None) -> None:
    if fut.done():
        return
    if isinstance(outcome, Exception):
        fut.set_exception(outcome)
    else:
        fut.set_result(outcome)
