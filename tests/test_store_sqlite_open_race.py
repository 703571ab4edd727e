"""Several processes opening one brand-new SQLite file at the same moment all succeed.

Losers of the race used to get a raw ``database is locked`` from ``PRAGMA journal_mode=WAL``
within milliseconds instead of waiting (issue 12). Six long-lived worker processes open a new
file together, released by one barrier, for twenty rounds.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import traceback
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from dive.sessions import SQLiteSessionStore
from dive.testing.session_conformance import turn

WORKERS = 6
ROUNDS = 20


async def _open_and_write(path: Path, me: int) -> None:
    store = SQLiteSessionStore(path)
    try:
        await store.load(f"w{me}")
        await store.checkpoint(f"w{me}", turn(), expected_revision=0)
    finally:
        await store.close()


def _worker(folder: str, me: int, barrier: Barrier, results: Any) -> None:
    for r in range(ROUNDS):
        try:
            barrier.wait(timeout=60)
        except Exception:  # a broken barrier: another worker died; stop quietly
            return
        try:
            asyncio.run(_open_and_write(Path(folder) / f"round{r}.db", me))
            results.put((r, me, "ok"))
        except BaseException:
            results.put((r, me, traceback.format_exc(limit=4)))


def test_processes_opening_a_new_file_together_all_succeed(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(str(tmp_path), i, barrier, results))
        for i in range(WORKERS)
    ]
    for p in procs:
        p.start()
    outcomes: list[tuple[int, int, str]] = []
    try:
        for _ in range(WORKERS * ROUNDS):
            outcomes.append(results.get(timeout=120))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    failures = [o for o in outcomes if o[2] != "ok"]
    assert not failures, failures[:3]

    async def count() -> None:
        for r in range(ROUNDS):
            store = SQLiteSessionStore(tmp_path / f"round{r}.db")
            assert len(await store.list()) == WORKERS
            await store.close()

    asyncio.run(count())
