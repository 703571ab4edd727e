"""Temporal: turns/s on the dev server with 1 and 2 workers (100 concurrent turns), the
overhead per step against the same turn in process, history bytes per step, and what a turn
costs the server (activity tasks, workflow tasks, store writes): the figures of the capacity
model in the README ("When one machine is not enough").

Needs DIVE_TEST_TEMPORAL_ADDRESS (``make bench`` starts the dev server). Workers run the test
agent (``tests/temporal_app.py``: a stateless model, instant tools) in child processes, on a
SQLite store, without toolsets (a toolset adds one listing activity per model call); a turn
is three model calls and two tool calls.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from tests.temporal_app import build_agent, temporal_agent

from benchmarks._report import Row
from dive.sessions import SQLiteSessionStore
from dive.temporal import connect

ROOT = Path(__file__).resolve().parent.parent
TURN = "plan: lookup:{k}a; lookup:{k}b"


def _spawn(address: str, queue: str, db: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.temporal_app", "worker", address, queue, str(db), "5"],
        cwd=ROOT,
        env={**os.environ, "DIVE_TEST_NO_TOOLSETS": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    return proc


async def _turns_per_second(address: str, workers: int, turns: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        queue = f"bench-{uuid.uuid4().hex}"
        procs = [_spawn(address, queue, db) for _ in range(workers)]
        store = SQLiteSessionStore(db)
        try:
            client = await connect(address)
            agent = temporal_agent(store, toolsets=False)
            kw = {"client": client, "task_queue": queue}
            await agent.run(TURN.format(k="warm"), **kw)  # type: ignore[arg-type]
            started = time.perf_counter()
            results = await asyncio.gather(
                *(agent.run(TURN.format(k=k), **kw) for k in range(turns))  # type: ignore[arg-type]
            )
            wall = time.perf_counter() - started
            assert all(r.status == "completed" for r in results)
            return turns / wall
        finally:
            await store.close()
            for p in procs:
                p.kill()
                p.wait()
                assert p.stdout is not None
                p.stdout.close()


async def _steps(address: str, steps: int) -> tuple[float, float, dict[str, float]]:
    """(seconds per step on Temporal, in process, per-turn costs) of one ``steps``-step turn."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteSessionStore(Path(tmp) / "steps.db")
        try:
            prompt = f"loop: lookup {steps}"
            started = time.perf_counter()
            await build_agent(toolsets=False).run(prompt, session=store.session("local"))
            local = (time.perf_counter() - started) / steps
            client = await connect(address)
            agent = temporal_agent(store, toolsets=False)
            queue = f"bench-{uuid.uuid4().hex}"
            async with agent.worker(client, task_queue=queue):
                handle = await agent.start(prompt, client=client, task_queue=queue)
                started, cpu = time.perf_counter(), time.process_time()
                await handle.result()
                remote = (time.perf_counter() - started) / steps
                cpu = (time.process_time() - cpu) / steps
                history = await client.get_workflow_handle(handle.workflow_id).fetch_history()
        finally:
            await store.close()
    kinds = Counter(e.event_type for e in history.events)
    costs = {
        "cpu": cpu,
        "bytes": sum(e.ByteSize() for e in history.events) / steps,
        "activities": kinds[EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED] / steps,
        "workflow tasks": kinds[EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED] / steps,
        "store ops": kinds[EventType.EVENT_TYPE_MARKER_RECORDED] / steps,
    }
    return remote, local, costs


def run_all(*, quick: bool = False) -> list[Row]:
    address = os.environ.get("DIVE_TEST_TEMPORAL_ADDRESS")
    if not address:
        return [Row("T Temporal", "no dev server", "-", True)]
    turns = 30 if quick else 100
    rows: list[Row] = []
    for workers in (1, 2):
        rate = asyncio.run(_turns_per_second(address, workers, turns))
        name = f"T {turns} concurrent turns, {workers} worker(s)"
        rows.append(Row(name, f"{rate:.1f} turns/s", "-", True, rate, "turns/s", "higher"))
    steps = 20 if quick else 50
    remote, local, costs = asyncio.run(_steps(address, steps))
    overhead = (remote - local) * 1000
    rows.append(
        Row(
            f"T overhead per step ({steps}-step turn)",
            f"{overhead:.1f} ms",
            "-",
            True,
            overhead,
            "ms",
        )
    )
    cpu = costs["cpu"] * 1000
    rows.append(
        Row("T worker CPU per step (with its client)", f"{cpu:.1f} ms", "-", True, cpu, "ms")
    )
    size = costs["bytes"]
    rows.append(Row("T history bytes per step", f"{size:,.0f} B", "flat", True, size, "B"))
    per_step = (
        f"{costs['activities']:.1f} act, {costs['workflow tasks']:.1f} wft, "
        f"{costs['store ops']:.1f} store"
    )
    tasks = costs["activities"] + costs["workflow tasks"]
    rows.append(Row("T server work per step", per_step, "-", True, tasks, "tasks"))
    return rows


if __name__ == "__main__":
    for row in run_all(quick=bool(os.environ.get("QUICK"))):
        print(*row, sep=" | ")
