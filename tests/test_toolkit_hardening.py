"""File tool hardening: ``Write`` and ``Edit`` replace a file whole or not at all (a failed
write leaves the old content), and ``Grep`` stops at its time budget."""

from __future__ import annotations

import errno
import os
import re
import resource
import signal
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dive.agent._outputs import to_tool_result
from dive.errors import UserError
from dive.messages import ToolCall, ToolResult
from dive.toolkit._files import Edit, Write
from dive.toolkit._search import Grep
from dive.toolkit._workspace import Workspace
from dive.tools import Tool, ToolContext


async def invoke(tool: Tool, **arguments: Any) -> ToolResult:
    """Validate, call, and convert exactly as the loop does: the result the model sees."""
    value, error = tool.validate(arguments)
    assert error is None, error
    output = await tool.call(
        value, ToolContext(tool_call_id="c1", tool_name=tool.name, turn_id="t")
    )
    return to_tool_result(ToolCall(id="c1", name=tool.name, arguments=arguments), output)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


LIMIT = 64 * 1024


@pytest.fixture
def disk_fills_at_64k() -> Iterator[None]:
    """Writes past 64 KiB in any file fail with EFBIG, as on a full disk (RLIMIT_FSIZE)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a core dump
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


# --- Write and Edit: all or nothing -------------------------------------------------------------


async def test_a_write_failing_midway_keeps_the_old_content(
    ws: Workspace, root: Path, disk_fills_at_64k: None
) -> None:
    (root / "notes.txt").write_text("precious\n")
    result = await invoke(Write(ws), file_path="notes.txt", content="x" * (3 * LIMIT))
    assert result.is_error is True
    assert 'Could not write "notes.txt"' in result.text
    assert "the file was not changed" in result.text
    assert (root / "notes.txt").read_text() == "precious\n"
    assert leftovers(root) == ["notes.txt"]  # the temporary file was removed


async def test_an_edit_failing_midway_keeps_the_old_content(
    ws: Workspace, root: Path, disk_fills_at_64k: None
) -> None:
    original = "header\n" + "body\n" * 100
    (root / "code.py").write_text(original)
    result = await invoke(
        Edit(ws), file_path="code.py", old_string="header\n", new_string="y" * (3 * LIMIT)
    )
    assert result.is_error is True
    assert 'Could not write "code.py"' in result.text
    assert (root / "code.py").read_text() == original
    assert leftovers(root) == ["code.py"]


@pytest.mark.parametrize("step", ["fsync", "replace"])
async def test_an_io_error_before_the_rename_keeps_the_old_content(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    (root / "notes.txt").write_text("precious\n")

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, step, broken)
    write = await invoke(Write(ws), file_path="notes.txt", content="new\n")
    edit = await invoke(Edit(ws), file_path="notes.txt", old_string="precious", new_string="x")
    monkeypatch.undo()
    for result in (write, edit):
        assert result.is_error is True
        assert result.text == (
            'Could not write "notes.txt": Input/output error; the file was not changed.'
        )
    assert (root / "notes.txt").read_text() == "precious\n"
    assert leftovers(root) == ["notes.txt"]


async def test_write_and_edit_keep_the_mode(ws: Workspace, root: Path) -> None:
    target = root / "run.sh"
    target.write_text("echo one\n")
    target.chmod(0o750)
    assert not (await invoke(Write(ws), file_path="run.sh", content="echo two\n")).is_error
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    edited = await invoke(Edit(ws), file_path="run.sh", old_string="two", new_string="three")
    assert not edited.is_error, edited.text
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert target.read_text() == "echo three\n"
    assert leftovers(root) == ["run.sh"]


async def test_a_new_file_gets_the_usual_mode(ws: Workspace, root: Path) -> None:
    umask = os.umask(0o022)
    try:
        assert not (await invoke(Write(ws), file_path="new.txt", content="hi\n")).is_error
    finally:
        os.umask(umask)
    assert stat.S_IMODE((root / "new.txt").stat().st_mode) == 0o644


async def test_write_replaces_the_file_not_other_hard_links(
    ws: Workspace, root: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("outside\n")
    os.link(elsewhere, root / "linked.txt")
    assert not (await invoke(Write(ws), file_path="linked.txt", content="inside\n")).is_error
    assert (root / "linked.txt").read_text() == "inside\n"
    assert elsewhere.read_text() == "outside\n"  # a new file took the name; the other is kept


# --- Grep: a time budget ----------------------------------------------------------------------

SLOW = r"(a+)+$"  # catastrophic backtracking: ~0.1 s per line below, 2x per extra "a"
SLOW_LINE = "a" * 20 + "b\n"


async def test_grep_stops_at_its_time_budget_between_lines(ws: Workspace, root: Path) -> None:
    (root / "slow.txt").write_text("fine\n" + SLOW_LINE * 200)  # ~20 s unbounded
    start = time.monotonic()
    result = await invoke(Grep(ws, time_budget=0.5), pattern=SLOW, output_mode="content")
    elapsed = time.monotonic() - start
    assert elapsed < 5, f"Grep ran {elapsed:.1f} s past a 0.5 s budget"
    assert result.is_error is False
    assert result.text.startswith("No matches found yet.\n")  # slow.txt was left part way
    assert '[Grep stopped after its time budget of 0.5 s, at "slow.txt"' in result.text
    assert "incomplete" in result.text


async def test_grep_stops_at_its_time_budget_between_files(ws: Workspace, root: Path) -> None:
    (root / "a_match.txt").write_text("aaa\n")
    for n in range(40):  # ~0.1 s each: ~4 s unbounded
        (root / f"f{n:02}.txt").write_text(SLOW_LINE)
    start = time.monotonic()
    result = await invoke(Grep(ws, time_budget=0.5), pattern=SLOW, output_mode="count")
    assert time.monotonic() - start < 3
    lines = result.text.splitlines()
    assert lines[0] == "a_match.txt:1"  # what was found before the budget ran out
    assert re.fullmatch(
        r'\[Grep stopped after its time budget of 0\.5 s, at "f\d\d\.txt": the results are '
        r"incomplete\. .*\]",
        lines[-1],
    )


async def test_grep_within_its_budget_says_nothing_about_it(ws: Workspace, root: Path) -> None:
    (root / "a.txt").write_text("aaa\nbbb\n")
    result = await invoke(Grep(ws, time_budget=5), pattern=SLOW, output_mode="content")
    assert result.text == "a.txt:1:aaa"


def test_grep_refuses_a_budget_that_is_not_positive(ws: Workspace) -> None:
    with pytest.raises(UserError, match="time_budget"):
        Grep(ws, time_budget=0)
