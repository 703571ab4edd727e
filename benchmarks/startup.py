"""Cold start: ``import dive``, ``from dive import Agent``, and a first run, each in a fresh
process (best of 5).

The first run is everything a program does before its first answer: import dive and the
Anthropic provider, start the bundled Anthropic simulator, and make one model call through
the official SDK.
"""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks._report import ROOT, Row

IMPORT_GOAL = 0.150

_FIRST_RUN = """
import time
t0 = time.perf_counter()
from dive import Agent
from dive.providers.anthropic import AnthropicModel
from dive.testing.anthropic import simulator, text
with simulator() as sim:
    sim.add(text("hello"))
    model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="bench")
    result = Agent(model=model).run_sync("hi")
    assert result.status == "completed", result.outcome
print(time.perf_counter() - t0)
"""


def _timed(code: str) -> float:
    """Seconds ``code`` takes in a fresh interpreter (its own clock, start-up excluded)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout.split()[-1])


def _statement(statement: str) -> float:
    return _timed(
        f"import time\nt0 = time.perf_counter()\n{statement}\nprint(time.perf_counter() - t0)"
    )


def run_all(*, quick: bool = False) -> list[Row]:
    n = 3 if quick else 5
    cold = min(_statement("import dive") for _ in range(n))
    agent = min(_statement("from dive import Agent") for _ in range(n))
    first = min(_timed(_FIRST_RUN) for _ in range(n))
    return [
        Row(
            "Cold start: import dive",
            f"{cold * 1e3:.0f} ms",
            f"<= {IMPORT_GOAL * 1e3:.0f} ms",
            cold <= IMPORT_GOAL,
            cold * 1e3,
            "ms",
        ),
        Row(
            "Cold start: from dive import Agent",
            f"{agent * 1e3:.0f} ms",
            "-",
            True,
            agent * 1e3,
            "ms",
        ),
        Row(
            "First run (import + Anthropic simulator call)",
            f"{first * 1e3:.0f} ms",
            "-",
            True,
            first * 1e3,
            "ms",
        ),
    ]


if __name__ == "__main__":
    for row in run_all(quick=True):
        print(row.name, row.shown)
