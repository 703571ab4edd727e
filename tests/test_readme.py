"""Every ``python`` code block of README.md runs as written, each on its own; so do its
``console`` blocks of ``dive`` commands, against the bundled simulator.

Each block runs in a fresh namespace (no block may use another's variables), in an empty
working folder, with placeholder API keys so model construction works offline; the blocks
use dive's scripted model where they call a model.
"""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from tests._cli import console_blocks, run_console_block

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[int, str]]:
    text = README.read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_readme_has_examples() -> None:
    assert len(_blocks()) >= 6


def _shown(code: str) -> list[str]:
    """What a block says it prints: the text after ``# →`` (up to an ellipsis)."""
    return [m.split("…")[0].strip() for m in re.findall(r"# → (.+)$", code, re.MULTILINE)]


@pytest.mark.parametrize(("line", "code"), _blocks(), ids=lambda v: str(v)[:12])
def test_block_runs(
    line: int,
    code: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(key, "test-placeholder")
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code)
    runpy.run_path(str(script), run_name="__main__")
    printed = capsys.readouterr().out
    for expected in _shown(code):
        assert expected in printed, (line, expected, printed)


def test_the_readme_shows_the_command_line_right_after_the_set_up() -> None:
    headings = re.findall(r"^## (.+)$", README.read_text(), re.MULTILINE)
    assert headings[:2] == ["Set up on a fresh machine", "The `dive` command"]
    assert console_blocks(README)


@pytest.mark.parametrize(("line", "block"), console_blocks(README), ids=lambda v: str(v)[:12])
def test_console_block_runs_against_the_simulator(line: int, block: str, tmp_path: Path) -> None:
    """The README's ``dive`` examples, run in a shell, offline, in a fresh home and folder."""
    run_console_block(block, tmp_path, where=f"README.md:{line}")
