"""Run every benchmark, print one table and write it as JSON: ``python -m benchmarks``.

Options: ``--quick`` (smaller sizes), ``--json PATH`` (where the JSON goes; default
``.bench/bench-<time>-<commit>.json``). Compare two runs with ``make bench-compare A=… B=…``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks import caching, calls, durable, loop, startup, temporal
from benchmarks._report import table, write


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    target = Path(argv[argv.index("--json") + 1]) if "--json" in argv else None
    rows = (
        calls.run_all(quick=quick)
        + loop.run_all(quick=quick)
        + durable.run_all(quick=quick)
        + startup.run_all(quick=quick)
        + caching.run_all(quick=quick)
        + temporal.run_all(quick=quick)
    )
    print(table(rows))
    print(f"\nwritten: {write(rows, quick=quick, path=target)}")


if __name__ == "__main__":
    main(sys.argv[1:])
