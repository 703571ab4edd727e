"""Benchmark rows, the printed table and the JSON file written next to it.

Every row keeps its number (``value`` in ``unit``) beside the text shown, so two runs can be
compared (``python -m benchmarks.compare A.json B.json``, ``make bench-compare A=… B=…``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent


class Row(NamedTuple):
    """One measured workload: what is shown, its goal, whether it is met, and its number."""

    name: str
    shown: str
    goal: str
    ok: bool
    value: float | None = None
    unit: str = ""
    better: str = "lower"  # "lower" or "higher": which way an improvement goes


def table(rows: Sequence[Row]) -> str:
    """The rows as the fixed-width table ``make bench`` prints."""
    width = max(len(r.name) for r in rows)
    lines = [f"{'workload':<{width}}  {'measured':>14}  {'goal':>12}  ok", "-" * (width + 36)]
    for r in rows:
        lines.append(f"{r.name:<{width}}  {r.shown:>14}  {r.goal:>12}  {'yes' if r.ok else 'NO'}")
    return "\n".join(lines)


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def report(rows: Sequence[Row], *, quick: bool) -> dict[str, Any]:
    """The JSON document of one run: when, where, on what, and every row."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "commit": _commit(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in load]},
        "quick": quick,
        "rows": [r._asdict() for r in rows],
    }


def write(rows: Sequence[Row], *, quick: bool, path: Path | None = None) -> Path:
    """Write the run's JSON (default ``.bench/bench-<time>-<commit>.json``); returns its path."""
    doc = report(rows, quick=quick)
    if path is None:
        stamp = doc["time"].replace(":", "").replace("-", "")
        path = ROOT / ".bench" / f"bench-{stamp}-{doc['commit']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def load(path: str | Path) -> dict[str, Any]:
    """A JSON file ``write`` produced."""
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    if "rows" not in doc:
        sys.exit(f"{path} is not a benchmark result (no rows)")
    return doc
