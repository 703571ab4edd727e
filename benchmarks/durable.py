"""W5: the W1 workload with SQLite step checkpoints, and Postgres checkpoint throughput.

W5a runs W1's workload (10 tool iterations + final answer per run, each run a fresh session)
three ways: no session, an SQLite session without step checkpoints, and an SQLite session
with step checkpoints (3 writes per model call). W5b measures checkpoints per second for
PostgreSQL with 50 sessions checkpointing concurrently (needs DIVE_TEST_POSTGRES_DSN, which
``make bench`` sets).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from benchmarks.loop import _script, add
from dive.agent import Agent, Durability, Limits
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel
from dive.testing.session_conformance import turn

Row = tuple[str, str, str, bool]


async def _per_call(runs: int, mode: str) -> tuple[float, int]:
    folder = Path(tempfile.mkdtemp(prefix="dive-bench-"))
    store = SQLiteSessionStore(folder / "bench.db")
    model = ScriptedModel()
    for _ in range(runs):
        model.add(*_script(10))
    agent = Agent(
        model=model,
        tools=[add],
        limits=Limits(max_model_calls_per_turn=1000),
        durability=Durability(checkpoint_steps=mode == "checkpoints"),
    )
    await store.load("warm")
    calls = 0
    t0 = time.perf_counter()
    for i in range(runs):
        session = None if mode == "none" else store.session(f"s{i}")
        r = await agent.run("go", session=session)
        assert r.status == "completed", r.outcome
        calls += r.turn.model_calls
    wall = time.perf_counter() - t0
    await store.close()
    return wall / calls, calls


async def _pg_throughput(dsn: str, sessions: int, per_session: int) -> float:
    from dive.sessions._postgres import PostgresSessionStore

    async with PostgresSessionStore(dsn, max_size=sessions) as store:
        stamp = time.time_ns()

        async def one(i: int) -> None:
            sid = f"bench-{stamp}-{i}"
            t = turn("running")
            rev = 0
            for _ in range(per_session):
                rev = await store.checkpoint(sid, t, expected_revision=rev)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(sessions)))
        wall = time.perf_counter() - t0
        for i in range(sessions):
            await store.delete(f"bench-{stamp}-{i}")
    return sessions * per_session / wall


def run_all(*, quick: bool = False) -> list[Row]:
    runs = 30 if quick else 100
    best: dict[str, float] = {}
    for mode in ("none", "sqlite", "checkpoints"):
        best[mode] = min(asyncio.run(_per_call(runs, mode))[0] for _ in range(3))
    ratio = best["checkpoints"] / best["none"]
    ratio_sqlite = best["checkpoints"] / best["sqlite"]
    rows: list[Row] = [
        ("W5 per model call, no session", f"{best['none'] * 1e6:.0f} us", "-", True),
        ("W5 per model call, SQLite session", f"{best['sqlite'] * 1e6:.0f} us", "-", True),
        (
            "W5 per model call, SQLite + checkpoints",
            f"{best['checkpoints'] * 1e6:.0f} us",
            "-",
            True,
        ),
        ("W5 checkpoints vs W1 (no session)", f"{ratio:.1f}x", "<= 2x", ratio <= 2),
        ("W5 checkpoints vs SQLite without", f"{ratio_sqlite:.1f}x", "-", True),
    ]
    dsn = os.environ.get("DIVE_TEST_POSTGRES_DSN")
    if dsn:
        rate = asyncio.run(_pg_throughput(dsn, 50, 10 if quick else 40))
        rows.append(("W5 Postgres checkpoints/s, 50 sessions", f"{rate:,.0f}/s", "-", True))
    else:
        rows.append(("W5 Postgres checkpoints/s, 50 sessions", "no PostgreSQL", "-", True))
    return rows
