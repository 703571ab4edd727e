"""Agent-loop benchmarks W1-W4 with an in-process scripted model and an async ``add`` tool.

W1: 200 runs, each 10 tool iterations + final answer: framework overhead per model call, with a
    streaming model (the default), the same model answering in one piece, and a sync tool
    (run in a worker thread).
W2: 100 / 1,000 / 10,000 concurrent runs of one agent, 5 iterations + final, the model
    awaiting 10 ms per call: wall and peak RSS, each size in a fresh process.
W3: one run of 300 iterations: mean time per iteration, last 30 vs first 30.
W4: one response with 10 tool calls each awaiting 50 ms (parallel execution): wall.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._report import Row
from benchmarks.fake import LatencyModel
from dive.agent import Agent, Limits
from dive.llm import ModelRequest, ModelResponse
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script(iterations: int, per_call_delay: float = 0.0) -> list[ScriptItem]:
    responses: list[ModelResponse] = [
        tool_use(call("add", {"a": i, "b": 1}, id=f"c{i}")) for i in range(iterations)
    ]
    responses.append(text("done"))
    if per_call_delay == 0:
        return list(responses)

    def delayed(r: ModelResponse) -> ScriptItem:
        async def answer(_: ModelRequest) -> ModelResponse:
            await asyncio.sleep(per_call_delay)
            return r

        return answer

    return [delayed(r) for r in responses]


def add_sync(a: int, b: int) -> int:
    """Add two integers (a sync tool)."""
    return a + b


def _agent(model: ScriptedModel, *, sync_tool: bool = False) -> Agent:
    tool = add_sync if sync_tool else add
    return Agent(model=model, tools=[tool], limits=Limits(max_model_calls_per_turn=1000))


def _script_for(iterations: int, sync_tool: bool) -> list[ScriptItem]:
    items = _script(iterations)
    if not sync_tool:
        return items
    out: list[ScriptItem] = [
        tool_use(call("add_sync", {"a": i, "b": 1}, id=f"c{i}")) for i in range(iterations)
    ]
    out.append(text("done"))
    return out


async def _w1(runs: int, *, streaming: bool = True, sync_tool: bool = False) -> float:
    """Seconds per model call of framework overhead.

    The baseline is the scripted model alone: the same responses streamed and discarded, so
    everything dive does with them (accumulation, messages, tools, events) counts as overhead.
    Measured in process CPU time: the workload is CPU-bound and this is robust to neighbours.
    """
    model = ScriptedModel(streaming=streaming)
    for _ in range(runs):
        model.add(*_script(10))
    req = ModelRequest()
    gc.collect()
    t0 = time.process_time()
    for _ in range(runs * 11):
        if streaming:
            async for _event in model.stream(req):
                pass
        else:
            await model.generate(req)
    base = time.process_time() - t0
    calls = 0
    agent_model = ScriptedModel(streaming=streaming)
    agent = _agent(agent_model, sync_tool=sync_tool)
    for _ in range(runs):
        agent_model.add(*_script_for(10, sync_tool))
    gc.collect()
    t0 = time.process_time()
    for _ in range(runs):
        r = await agent.run("go")
        assert r.status == "completed", r.outcome
        calls += r.turn.model_calls
    total = time.process_time() - t0
    return (total - base) / calls


def _peak_rss_mb() -> float:
    """This process's peak RSS in MB: ``VmHWM`` (Linux), else ``ru_maxrss``.

    ``ru_maxrss`` of a process started from a big parent can include the parent's memory at
    the fork; ``VmHWM`` is the process's own high-water mark.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def w2(runs: int) -> tuple[float, float]:
    """``runs`` concurrent runs of one agent (5 tool iterations + final, 10 ms per model call)."""
    gc.collect()
    before = _peak_rss_mb()
    agent = Agent(
        model=LatencyModel(5, 0.010), tools=[add], limits=Limits(max_model_calls_per_turn=1000)
    )
    t0 = time.perf_counter()
    results = await asyncio.gather(*(agent.run("go") for _ in range(runs)))
    wall = time.perf_counter() - t0
    assert all(r.status == "completed" and r.turn.model_calls == 6 for r in results)
    peak = _peak_rss_mb()
    return wall, max(peak, before)


async def _w3(iterations: int) -> float:
    stamps: list[float] = []

    def stamp(_: object) -> None:
        if getattr(_, "type", None) == "message":
            stamps.append(time.perf_counter())

    model = ScriptedModel(_script(iterations))
    agent = _agent(model)
    r = await agent.run("go", on_event=stamp)
    assert r.status == "completed", r.outcome
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    first = sum(gaps[:30]) / 30
    last = sum(gaps[-30:]) / 30
    return last / first


async def _w4() -> float:
    async def slow_add(a: int, b: int) -> int:
        """Add slowly."""
        await asyncio.sleep(0.05)
        return a + b

    calls = [call("slow_add", {"a": i, "b": 1}, id=f"p{i}") for i in range(10)]
    model = ScriptedModel([tool_use(*calls), text("done")])
    agent = Agent(model=model, tools=[slow_add])  # parallel by default
    t0 = time.perf_counter()
    r = await agent.run("go")
    wall = time.perf_counter() - t0
    assert r.status == "completed"
    return wall


def _w2_fresh_process(runs: int, *, tuned_gc: bool = False) -> tuple[float, float]:
    """W2 in its own process, so peak RSS is W2's alone (not W1's leftovers).

    ``tuned_gc`` raises the full-collection threshold as docs/performance.md suggests for
    processes holding thousands of runs.
    """
    root = Path(__file__).resolve().parent.parent
    tune = "import gc; gc.set_threshold(700, 10, 1_000_000); " if tuned_gc else ""
    code = (
        f"{tune}import asyncio; from benchmarks.loop import w2; "
        f"wall, rss = asyncio.run(w2({runs})); print(wall, rss)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    wall, rss = out.stdout.split()[-2:]
    return float(wall), float(rss)


def _best(fn: Callable[[], float], times: int) -> float:
    return min(fn() for _ in range(times))


def run_all(*, quick: bool = False) -> list[Row]:
    rows: list[Row] = []
    runs = 50 if quick else 200
    w1 = _best(lambda: asyncio.run(_w1(runs)), 5)
    rows.append(
        Row(
            "W1 overhead per model call",
            f"{w1 * 1e6:.1f} us",
            "<= 50 us",
            w1 <= 50e-6,
            w1 * 1e6,
            "us",
        )
    )
    w1g = _best(lambda: asyncio.run(_w1(runs, streaming=False)), 5)
    rows.append(Row("W1 non-streaming model", f"{w1g * 1e6:.1f} us", "-", True, w1g * 1e6, "us"))
    ratio = w1 / w1g
    rows.append(
        Row("W1 streaming / non-streaming", f"{ratio:.2f}x", "<= 1.3x", ratio <= 1.3, ratio, "x")
    )
    w1s = _best(lambda: asyncio.run(_w1(runs, sync_tool=True)), 5)
    rows.append(
        Row("W1_sync (sync tool, worker thread)", f"{w1s * 1e6:.1f} us", "-", True, w1s * 1e6, "us")
    )
    sizes = (100, 1000) if quick else (100, 1000, 10000)
    goals = {100: (0.2, 100.0), 1000: (0.5, 100.0), 10000: (5.0, 300.0)}
    for n in sizes:
        wall, rss = _w2_fresh_process(n)
        wall_goal, rss_goal = goals[n]
        rows.append(
            Row(
                f"W2 {n} concurrent runs, wall",
                f"{wall:.3f} s",
                f"<= {wall_goal} s",
                wall <= wall_goal,
                wall,
                "s",
            )
        )
        rows.append(
            Row(
                f"W2 {n} peak RSS",
                f"{rss:.0f} MB",
                f"<= {rss_goal:.0f} MB",
                rss <= rss_goal,
                rss,
                "MB",
            )
        )
    if not quick:
        wall, _ = _w2_fresh_process(10000, tuned_gc=True)
        rows.append(
            Row("W2 10000 concurrent runs, gc tuned", f"{wall:.3f} s", "-", True, wall, "s")
        )
    w3 = min(asyncio.run(_w3(300)) for _ in range(3))
    rows.append(
        Row("W3 last-30 / first-30 per iteration", f"{w3:.2f}x", "<= 1.2x", w3 <= 1.2, w3, "x")
    )
    w4 = asyncio.run(_w4())
    rows.append(
        Row("W4 10 parallel 50 ms calls, wall", f"{w4:.3f} s", "<= 0.055 s", w4 <= 0.055, w4, "s")
    )
    return rows
