"""W5: the W1 workload with step checkpoints, long durable turns, and concurrent sessions.

W5a runs W1's workload (10 tool iterations + final answer per run, each run a fresh session):
no session, an SQLite session without step checkpoints, and SQLite with step checkpoints (3
writes per model call) at ``synchronous="normal"`` and ``"full"``; per model call, wall
clock, and as a ratio to the no-session run and to W1's overhead. W5c is one 300-iteration
durable turn: mean time per iteration, last 30 vs first 30 (a step write must not grow with
the turn). W5b measures PostgreSQL checkpoints per second with 50 sessions checkpointing
concurrently (200 each, the first a full record; best of 3); W5d runs 1,000 durable
sessions at once on SQLite and PostgreSQL (wall, checkpoints/s). PostgreSQL rows need
DIVE_TEST_POSTGRES_DSN, which ``make bench`` sets.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
import time
from pathlib import Path
from typing import Literal

from benchmarks._report import Row
from benchmarks.fake import LatencyModel
from benchmarks.loop import _script, _w1, add
from dive.agent import Agent, Durability, Limits
from dive.sessions import SessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel
from dive.testing.session_conformance import turn

Sync = Literal["normal", "full"]


def _sqlite(sync: Sync = "normal") -> SQLiteSessionStore:
    folder = Path(tempfile.mkdtemp(prefix="dive-bench-"))
    return SQLiteSessionStore(folder / "bench.db", synchronous=sync)


async def _per_call(runs: int, mode: str, sync: Sync = "normal") -> float:
    store = _sqlite(sync)
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
    return wall / calls


async def _late_early(iterations: int) -> float:
    """Last-30 / first-30 mean time per iteration of one durable SQLite turn."""
    stamps: list[float] = []

    def stamp(event: object) -> None:
        if getattr(event, "type", None) == "message":
            stamps.append(time.perf_counter())

    store = _sqlite()
    agent = Agent(
        model=ScriptedModel(_script(iterations)),
        tools=[add],
        limits=Limits(max_model_calls_per_turn=iterations + 10),
        durability=Durability(checkpoint_steps=True),
    )
    r = await agent.run("go", session=store.session("long"), on_event=stamp)
    assert r.status == "completed", r.outcome
    await store.close()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    return (sum(gaps[-30:]) / 30) / (sum(gaps[:30]) / 30)


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


async def _concurrent(store: SessionStore, sessions: int) -> tuple[float, float]:
    """``sessions`` durable W1 runs at once (5 iterations + final): wall, checkpoints/s."""
    agent = Agent(
        model=LatencyModel(5, 0.0),
        tools=[add],
        limits=Limits(max_model_calls_per_turn=100),
        durability=Durability(checkpoint_steps=True),
    )
    prefix = f"c{time.time_ns()}"
    t0 = time.perf_counter()
    results = await asyncio.gather(
        *(agent.run("go", session=store.session(f"{prefix}-{i}")) for i in range(sessions))
    )
    wall = time.perf_counter() - t0
    assert all(r.status == "completed" for r in results)
    writes = sum(r.turn.revision for r in results)  # one revision per write, fresh sessions
    for i in range(sessions):
        await store.delete(f"{prefix}-{i}")
    return wall, writes / wall


async def _concurrent_sqlite(sessions: int) -> tuple[float, float]:
    store = _sqlite()
    await store.load("warm")
    try:
        return await _concurrent(store, sessions)
    finally:
        await store.close()


async def _concurrent_pg(dsn: str, sessions: int) -> tuple[float, float]:
    from dive.sessions._postgres import PostgresSessionStore

    async with PostgresSessionStore(dsn, max_size=20) as store:
        return await _concurrent(store, sessions)


def _w5a(runs: int) -> list[Row]:
    best: dict[str, float] = {}
    for mode in ("none", "sqlite"):
        best[mode] = min(asyncio.run(_per_call(runs, mode)) for _ in range(3))
    for sync in ("normal", "full"):
        best[sync] = min(asyncio.run(_per_call(runs, "checkpoints", sync)) for _ in range(3))
    w1 = min(asyncio.run(_w1(runs)) for _ in range(3))
    rows: list[Row] = [
        Row(
            "W5 per model call, no session",
            f"{best['none'] * 1e6:.0f} us",
            "-",
            True,
            best["none"] * 1e6,
            "us",
        ),
        Row(
            "W5 per model call, SQLite session",
            f"{best['sqlite'] * 1e6:.0f} us",
            "-",
            True,
            best["sqlite"] * 1e6,
            "us",
        ),
    ]
    for sync in ("normal", "full"):
        per = best[sync]
        ratio = per / best["none"]
        rows += [
            Row(
                f"W5 per model call, SQLite {sync} + checkpoints",
                f"{per * 1e6:.0f} us",
                "-",
                True,
                per * 1e6,
                "us",
            ),
            Row(
                f"W5 {sync} vs no session (W1 workload)",
                f"{ratio:.1f}x",
                "<= 2x",
                ratio <= 2,
                ratio,
                "x",
            ),
            Row(f"W5 {sync} vs W1 overhead", f"{per / w1:.1f}x", "-", True, per / w1, "x"),
        ]
    return rows


def run_all(*, quick: bool = False) -> list[Row]:
    rows = _w5a(30 if quick else 100)
    late = min(asyncio.run(_late_early(300)) for _ in range(3))
    rows.append(
        Row(
            "W5 durable 300 iterations, late/early",
            f"{late:.2f}x",
            "<= 1.2x",
            late <= 1.2,
            late,
            "x",
        )
    )
    many = 200 if quick else 1000
    wall, rate = asyncio.run(_concurrent_sqlite(many))
    rows.append(
        Row(
            f"W5 {many} durable sessions, SQLite",
            _wall_rate(wall, rate),
            "-",
            True,
            rate,
            "checkpoints/s",
            "higher",
        )
    )
    dsn = os.environ.get("DIVE_TEST_POSTGRES_DSN")
    if not dsn:
        rows.append(Row("W5 Postgres checkpoints/s, 50 sessions", "no PostgreSQL", "-", True))
        return rows
    per_session = 20 if quick else 200
    rate = max(asyncio.run(_pg_throughput(dsn, 50, per_session)) for _ in range(3))
    rows.append(
        Row(
            "W5 Postgres checkpoints/s, 50 sessions",
            f"{rate:,.0f}/s",
            ">= 5,000/s",
            rate >= 5000,
            rate,
            "/s",
            "higher",
        )
    )
    wall, rate = asyncio.run(_concurrent_pg(dsn, many))
    rows.append(
        Row(
            f"W5 {many} durable sessions, Postgres",
            _wall_rate(wall, rate),
            "-",
            True,
            rate,
            "checkpoints/s",
            "higher",
        )
    )
    return rows


def _wall_rate(wall: float, rate: float) -> str:
    return f"{wall:.2f} s, {rate:,.0f} checkpoints/s"


if __name__ == "__main__":
    for row in run_all(quick=bool(os.environ.get("QUICK"))):
        print(row.name, row.shown, row.goal, sep=" | ")
