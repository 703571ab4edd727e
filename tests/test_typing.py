"""pyright strict on a user's program with deliberate mistakes reports each of them.

``tests/typing/user_program.py`` (correct code with ``assert_type`` checks) is part of the
main type check; ``tests/typing/typos.py`` is excluded from it and checked here, in a
folder of its own with a strict configuration, against the installed ``dive``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TYPOS = Path(__file__).parent / "typing" / "typos.py"


def _expected() -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for number, line in enumerate(TYPOS.read_text().splitlines(), start=1):
        m = re.search(r"  # error: (.+)$", line)
        if m:
            out[number] = [r.strip() for r in m.group(1).split(",")]
    return out


def _matches(rule: str, patterns: list[str]) -> bool:
    return any(rule == p or (p.endswith("*") and rule.startswith(p[:-1])) for p in patterns)


def test_each_deliberate_mistake_is_an_error(tmp_path: Path) -> None:
    pyright = shutil.which("pyright", path=str(Path(sys.executable).parent))
    if pyright is None:
        pytest.fail("pyright is not installed in this environment (it is a dev dependency)")
    target = tmp_path / "typos.py"
    shutil.copy(TYPOS, target)
    (tmp_path / "pyrightconfig.json").write_text(
        json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"})
    )
    proc = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable, str(target)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    report = json.loads(proc.stdout)
    found = [
        (d["range"]["start"]["line"] + 1, d.get("rule", ""), d["message"])
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    expected = _expected()
    unexpected = [f for f in found if not _matches(f[1], expected.get(f[0], []))]
    assert not unexpected, unexpected
    for line, patterns in expected.items():
        exact = [p for p in patterns if not p.endswith("*")]
        for rule in exact:
            assert (line, rule) in {(f[0], f[1]) for f in found}, (line, rule, found)
