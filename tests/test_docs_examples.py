"""Every ``python`` block of the extension docs pages runs as written, each on its own.

As for the README: a fresh namespace and an empty working folder per block, offline (the
blocks use dive's scripted model); what a block says it prints (``# → ...``) is checked.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ("compaction.md", "subagents.md", "skills.md", "hooks.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for page in PAGES:
        text = (DOCS / page).read_text()
        for m in BLOCK.finditer(text):
            out.append((f"{page}:{text[: m.start()].count(chr(10)) + 1}", m.group(1)))
    return out


def _shown(code: str) -> list[str]:
    return [m.split("…")[0].strip() for m in re.findall(r"# → (.+)$", code, re.MULTILINE)]


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=lambda v: str(v)[:24])
def test_block_runs(
    where: str,
    code: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))  # no user-level skills or agents leak in
    script = tmp_path / "block.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    for expected in _shown(code):
        assert expected in printed, (where, expected, printed)
