"""Run every benchmark and print one table: ``python -m benchmarks [--quick]``."""

from __future__ import annotations

import sys

from benchmarks import caching, durable, loop, temporal


def main() -> None:
    quick = "--quick" in sys.argv
    rows = loop.run_all(quick=quick) + durable.run_all(quick=quick) + caching.run_all(quick=quick)
    rows += temporal.run_all(quick=quick)
    width = max(len(r[0]) for r in rows)
    print(f"{'workload':<{width}}  {'measured':>14}  {'goal':>12}  ok")
    print("-" * (width + 36))
    for name, value, goal, ok in rows:
        print(f"{name:<{width}}  {value:>14}  {goal:>12}  {'yes' if ok else 'NO'}")


if __name__ == "__main__":
    main()
