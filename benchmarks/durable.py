"""W5: durable turns on SQLite and PostgreSQL.

W5a is the shape users have: each turn in a fresh session, step checkpoints on (three writes
per tool-calling model call), claims off; wall time per model call with and without a
session, for turns of 10 and of 100 tool steps, and as a ratio (goals: <= 3x and <= 2x). The
bytes of one step row (the JSON a checkpoint appends) are printed for a 100-step turn. W5c is
one 300-iteration durable turn: last 30 vs first 30 (a step write must not grow with the
turn). W5b measures PostgreSQL checkpoints per second with 100 sessions checkpointing
concurrently (200 each, the first a full record; best of 3; goal >= 10,000/s); W5d runs
1,000 durable sessions at once on SQLite and PostgreSQL (wall, checkpoints/s). PostgreSQL
rows need DIVE_TEST_POSTGRES_DSN, which ``make bench`` sets.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Literal

from benchmarks._report import Row
from benchmarks.fake import LatencyModel
from benchmarks.loop import _script, add
from dive.agent import Agent, Durability, InProcessRunner, Limits
from dive.sessions import Session, SessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel
from dive.testing.session_conformance import turn
from dive.turns import Turn

Sync = Literal["normal", "full"]


def _sqlite(sync: Sync = "normal") -> SQLiteSessionStore:
    folder = Path(tempfile.mkdtemp(prefix="dive-bench-"))
    return SQLiteSessionStore(folder / "bench.db", synchronous=sync)


async def _per_call(runs: int, mode: str, sync: Sync = "normal", iterations: int = 10) -> float:
    """Wall seconds per model call: ``runs`` turns of ``iterations`` tool steps + a final
    answer, each turn in a fresh session (``none``: no session; ``sqlite``: a session without
    step checkpoints; ``checkpoints``: step checkpoints on, claims off). Measured in process
    CPU time, as W1 is (robust to neighbours on a shared machine; with ``synchronous="normal"``
    nothing waits for the disk); the ``full`` row's disk waits are therefore not in it."""
    store = _sqlite(sync)
    model = ScriptedModel()
    for _ in range(runs):
        model.add(*_script(iterations))
    agent = Agent(
        model=model,
        tools=[add],
        limits=Limits(max_model_calls_per_turn=iterations + 10),
        durability=Durability(checkpoint_steps=mode == "checkpoints"),
    )
    await store.load("warm")
    calls = 0
    t0 = time.process_time()
    for i in range(runs):
        session = None if mode == "none" else store.session(f"s{i}")
        r = await agent.run("go", session=session)
        assert r.status == "completed", r.outcome
        calls += r.turn.model_calls
    cpu = time.process_time() - t0
    await store.close()
    return cpu / calls


class _StepBytes(InProcessRunner):
    """Notes the size of the step rows a running turn's checkpoints appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self.chars = 0

    async def write(self, session: Session, turn: Turn, *, expected_revision: int) -> int:
        revision = await super().write(session, turn, expected_revision=expected_revision)
        if turn.status == "running":
            with sqlite3.connect(self.path) as conn:
                count, size = conn.execute(
                    "SELECT count(*), coalesce(sum(length(data)), 0) FROM dive_steps"
                ).fetchone()
            if count >= self.rows:
                self.rows, self.chars = count, size
        return revision


async def _bytes_per_step(iterations: int) -> float:
    """Average step row payload (JSON characters) of one durable turn of ``iterations``."""
    store = _sqlite()
    runner = _StepBytes(store.path)
    agent = Agent(
        model=ScriptedModel(_script(iterations)),
        tools=[add],
        limits=Limits(max_model_calls_per_turn=iterations + 10),
        durability=Durability(checkpoint_steps=True),
    )
    r = await agent.run("go", session=store.session("bytes"), runner=runner)
    assert r.status == "completed", r.outcome
    await store.close()
    return runner.chars / max(runner.rows, 1)


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


def _ratio_row(name: str, durable: float, plain: float, goal: float) -> list[Row]:
    ratio = durable / plain
    return [
        Row(f"{name}, no session", f"{plain * 1e6:.0f} us", "-", True, plain * 1e6, "us"),
        Row(
            f"{name}, SQLite + checkpoints",
            f"{durable * 1e6:.0f} us",
            "-",
            True,
            durable * 1e6,
            "us",
        ),
        Row(
            f"{name}: durable / no session",
            f"{ratio:.1f}x",
            f"<= {goal:g}x",
            ratio <= goal,
            ratio,
            "x",
        ),
    ]


def _w5a(runs: int) -> list[Row]:
    """The shape users have: a fresh session per turn, step checkpoints on, claims off."""
    best = {
        (mode, steps): min(
            asyncio.run(
                _per_call(runs if steps == 10 else max(runs // 10, 3), mode, iterations=steps)
            )
            for _ in range(3)
        )
        for steps in (10, 100)
        for mode in ("none", "checkpoints")
    }
    rows = _ratio_row(
        "W5 per model call, 10-step turns", best["checkpoints", 10], best["none", 10], 3
    )
    rows += _ratio_row(
        "W5 per model call, 100-step turns", best["checkpoints", 100], best["none", 100], 2
    )
    full = min(asyncio.run(_per_call(runs, "checkpoints", "full")) for _ in range(3))
    rows.append(
        Row(
            'W5 synchronous="full", 10-step turns: durable / no session',
            f"{full / best['none', 10]:.1f}x",
            "-",
            True,
            full / best["none", 10],
            "x",
        )
    )
    per_step = asyncio.run(_bytes_per_step(100))
    rows.append(
        Row("W5 bytes per step row (100-step turn)", f"{per_step:,.0f} B", "-", True, per_step, "B")
    )
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
        rows.append(Row("W5 Postgres checkpoints/s, 100 sessions", "no PostgreSQL", "-", True))
        return rows
    per_session = 20 if quick else 200
    rate = max(asyncio.run(_pg_throughput(dsn, 100, per_session)) for _ in range(3))
    rows.append(
        Row(
            "W5 Postgres checkpoints/s, 100 sessions",
            f"{rate:,.0f}/s",
            ">= 10,000/s",
            rate >= 10_000,
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
