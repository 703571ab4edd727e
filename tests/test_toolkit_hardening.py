"""File tool hardening: ``Write`` and ``Edit`` replace a file whole or not at all (a failed
write leaves the old content), and ``Grep`` stops at its time budget."""

from __future__ import annotations

import errno
import os
import resource
import signal
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dive.agent._outputs import to_tool_result
from dive.messages import ToolCall, ToolResult
from dive.toolkit._files import Edit, Write
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
