"""Compare two benchmark runs: ``python -m benchmarks.compare A.json B.json``.

Each workload of either run on one line: A's number, B's, B / A, and whether B meets its
goal. Timings are noisy on a shared machine: compare runs made under the same load (each file
records the load average it ran under).
"""

from __future__ import annotations

import sys
from typing import Any

from benchmarks._report import load


def _num(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    return str(row["shown"])


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The comparison table of runs ``a`` and ``b``."""
    rows_a = {r["name"]: r for r in a["rows"]}
    rows_b = {r["name"]: r for r in b["rows"]}
    names = list(rows_a) + [n for n in rows_b if n not in rows_a]
    width = max(len(n) for n in names)
    head = f"{'workload':<{width}}  {'A':>16}  {'B':>16}  {'B/A':>7}  {'goal':>12}  B ok"
    lines = [
        f"A: {a.get('commit')} {a.get('time')} load {a.get('machine', {}).get('load_average')}",
        f"B: {b.get('commit')} {b.get('time')} load {b.get('machine', {}).get('load_average')}",
        head,
        "-" * len(head),
    ]
    for n in names:
        ra, rb = rows_a.get(n), rows_b.get(n)
        ratio = "-"
        va = ra.get("value") if ra else None
        vb = rb.get("value") if rb else None
        if isinstance(va, int | float) and isinstance(vb, int | float) and va:
            ratio = f"{vb / va:.2f}"
        either: dict[str, Any] = rb or ra or {}
        goal = either.get("goal", "-")
        ok = "-" if rb is None else ("yes" if rb["ok"] else "NO")
        lines.append(f"{n:<{width}}  {_num(ra):>16}  {_num(rb):>16}  {ratio:>7}  {goal:>12}  {ok}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    if len(argv) != 2:
        sys.exit("usage: python -m benchmarks.compare A.json B.json")
    print(compare(load(argv[0]), load(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
