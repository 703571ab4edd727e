"""Workspace confinement, for every file tool: traversal, absolute paths, symbolic links (to
files, to directories, dangling, created after the tool was built), check-time/use-time swaps,
and failing closed. Every attempt is refused with an ``is_error`` result naming the path and
the root, and nothing outside the root is read, listed or changed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent
from dive.agent._outputs import to_tool_result
from dive.messages import ToolCall, ToolResult
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit._kit import file_tools
from dive.toolkit._workspace import PathOutsideWorkspaceError, Workspace
from dive.tools import Tool, ToolContext

SECRET = "TOPSECRET-CONTENT"
OUTSIDE_ONLY = "outside-only-name.txt"
FILE_TOOLS = ("Read", "Write", "Edit")
DIR_TOOLS = ("Glob", "Grep", "ListDirectory")
ALL_TOOLS = FILE_TOOLS + DIR_TOOLS


# --- the layout -------------------------------------------------------------------------------


class Layout:
    """``tmp/root`` (the workspace) beside ``tmp/outside`` (what must stay untouched)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.outside = tmp / "outside"
        self.root.mkdir()
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text(f"token {SECRET}\n")
        (self.outside / OUTSIDE_ONLY).write_text(f"token {SECRET}\n")
        (self.root / "sub").mkdir()
        (self.root / "sub" / "secret.txt").write_text("token inside\n")
        (self.root / "inside.txt").write_text("token inside\n")
        # a sibling whose name starts with the root's: a string-prefix check would let it in
        self.evil = tmp / "root-evil"
        self.evil.mkdir()
        (self.evil / "secret.txt").write_text(f"token {SECRET}\n")

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        """Every path outside the root, with its bytes and modification time."""
        out: dict[str, tuple[bytes, int]] = {}
        for top in (self.outside, self.evil):
            for path in sorted(top.rglob("*")):
                data = path.read_bytes() if path.is_file() else b"<dir>"
                out[str(path)] = (data, path.lstat().st_mtime_ns)
        return out


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    return Layout(tmp_path)


def arguments(name: str, file_target: str, dir_target: str) -> dict[str, Any]:
    """Arguments that would read, change or list the target if confinement failed."""
    match name:
        case "Read":
            return {"file_path": file_target}
        case "Write":
            return {"file_path": file_target, "content": "PWNED"}
        case "Edit":
            return {"file_path": file_target, "old_string": "token", "new_string": "PWNED"}
        case "Glob":
            return {"pattern": "**/*", "path": dir_target}
        case "Grep":
            return {"pattern": "token", "path": dir_target, "output_mode": "content"}
        case "ListDirectory":
            return {"path": dir_target}
        case _:
            raise AssertionError(name)


async def invoke(tool: Tool, args: dict[str, Any]) -> ToolResult:
    value, error = tool.validate(args)
    assert error is None, error
    output = await tool.call(value, ToolContext(tool_call_id="c", tool_name=tool.name, turn_id="t"))
    return to_tool_result(ToolCall(id="c", name=tool.name, arguments=args), output)


def tool_named(root: Path, name: str) -> Tool:
    [found] = [t for t in file_tools(root) if t.name == name]
    return found


def assert_refused(result: ToolResult, lay: Layout, before: dict[str, tuple[bytes, int]]) -> None:
    assert result.is_error, result.text
    assert result.text.startswith("Refused"), result.text
    assert str(lay.root) in result.text  # names the root
    assert SECRET not in result.text
    assert OUTSIDE_ONLY not in result.text
    assert lay.snapshot() == before  # nothing outside changed, nothing created
    assert "PWNED" not in (lay.root / "sub" / "secret.txt").read_text()


# --- attacks ----------------------------------------------------------------------------------

Attack = Callable[[Layout], tuple[str, str]]


def dotdot(lay: Layout) -> tuple[str, str]:
    return "../outside/secret.txt", "../outside"


def nested_dotdot(lay: Layout) -> tuple[str, str]:
    return "sub/../../outside/secret.txt", "sub/../../outside"


def absolute(lay: Layout) -> tuple[str, str]:
    return str(lay.outside / "secret.txt"), str(lay.outside)


def prefix_sibling(lay: Layout) -> tuple[str, str]:
    return str(lay.evil / "secret.txt"), str(lay.evil)


def symlink_file(lay: Layout) -> tuple[str, str]:
    (lay.root / "link.txt").symlink_to(lay.outside / "secret.txt")
    (lay.root / "linkdir").symlink_to(lay.outside)
    return "link.txt", "linkdir"


def symlinked_dir(lay: Layout) -> tuple[str, str]:
    (lay.root / "linkdir").symlink_to(lay.outside, target_is_directory=True)
    return "linkdir/secret.txt", "linkdir"


def relative_symlink(lay: Layout) -> tuple[str, str]:
    (lay.root / "sub" / "up").symlink_to("../../outside")
    return "sub/up/secret.txt", "sub/up"


def link_chain(lay: Layout) -> tuple[str, str]:
    (lay.root / "a").symlink_to("sub")  # inside, harmless on its own
    (lay.root / "sub" / "c").symlink_to(lay.outside)
    return "a/c/secret.txt", "a/c"


def dangling(lay: Layout) -> tuple[str, str]:
    (lay.root / "dangling").symlink_to(lay.outside / "not-yet.txt")
    (lay.root / "danglingdir").symlink_to(lay.outside / "not-yet-dir")
    return "dangling", "danglingdir"


def dangling_parent(lay: Layout) -> tuple[str, str]:
    (lay.root / "newdir").symlink_to(lay.outside / "made-by-tool")
    return "newdir/file.txt", "newdir"


LINK_ATTACKS: list[Attack] = [
    symlink_file,
    symlinked_dir,
    relative_symlink,
    link_chain,
    dangling,
    dangling_parent,
]
ATTACKS: list[Attack] = [
    dotdot,
    nested_dotdot,
    absolute,
    prefix_sibling,
    symlink_file,
    symlinked_dir,
    relative_symlink,
    link_chain,
    dangling,
    dangling_parent,
]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.__name__)
@pytest.mark.parametrize("name", ALL_TOOLS)
async def test_every_tool_refuses_every_escape(lay: Layout, name: str, attack: Attack) -> None:
    file_target, dir_target = attack(lay)
    before = lay.snapshot()
    result = await invoke(tool_named(lay.root, name), arguments(name, file_target, dir_target))
    assert_refused(result, lay, before)
    shown = file_target if name in FILE_TOOLS else dir_target
    assert f'"{shown}"' in result.text  # names the path it was given
    if attack in LINK_ATTACKS:  # refused by the check itself, before any open
        assert "goes through a symbolic link that points outside" in result.text
    assert not (lay.outside / "not-yet.txt").exists()
    assert not (lay.outside / "made-by-tool").exists()


@pytest.mark.parametrize("name", ALL_TOOLS)
async def test_a_symlink_made_after_the_tool_is_refused(lay: Layout, name: str) -> None:
    tool = tool_named(lay.root, name)  # built while "late" does not exist
    ok = await invoke(tool, arguments(name, "inside.txt", "sub"))
    assert not ok.is_error, ok.text
    (lay.root / "late").symlink_to(lay.outside)
    (lay.root / "late.txt").symlink_to(lay.outside / "secret.txt")
    before = lay.snapshot()
    result = await invoke(tool, arguments(name, "late.txt", "late"))
    assert_refused(result, lay, before)


# --- check-time / use-time swaps --------------------------------------------------------------


def swap_after_check(monkeypatch: pytest.MonkeyPatch, victim: Path, target: Path) -> list[str]:
    """Right after the first successful check, replace ``victim`` with a link to ``target``."""
    original = Workspace.resolve
    swapped: list[str] = []

    def resolve(self: Workspace, path: str | os.PathLike[str]) -> Path:
        real = original(self, path)
        if not swapped:
            victim.rename(victim.with_name(victim.name + ".moved"))
            victim.symlink_to(target)
            swapped.append(str(path))
        return real

    monkeypatch.setattr(Workspace, "resolve", resolve)
    return swapped


@pytest.mark.parametrize("name", ALL_TOOLS)
async def test_a_directory_swapped_for_a_link_after_the_check_is_refused(
    lay: Layout, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tool_named(lay.root, name)
    before = lay.snapshot()
    swapped = swap_after_check(monkeypatch, lay.root / "sub", lay.outside)
    result = await invoke(tool, arguments(name, "sub/secret.txt", "sub"))
    assert swapped, "the check ran"
    assert (lay.root / "sub").is_symlink()  # the swap happened before the open
    assert_refused(result, lay, before)
    assert "became a symbolic link" in result.text  # caught by the open, not by a re-check


@pytest.mark.parametrize("name", FILE_TOOLS)
async def test_a_file_swapped_for_a_link_after_the_check_is_refused(
    lay: Layout, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = tool_named(lay.root, name)
    before = lay.snapshot()
    swap_after_check(monkeypatch, lay.root / "inside.txt", lay.outside / "secret.txt")
    result = await invoke(tool, arguments(name, "inside.txt", "."))
    assert_refused(result, lay, before)
    assert "became a symbolic link" in result.text


async def test_write_into_a_parent_swapped_after_the_check_creates_nothing_outside(
    lay: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = lay.snapshot()
    swap_after_check(monkeypatch, lay.root / "sub", lay.outside)
    result = await invoke(
        tool_named(lay.root, "Write"), {"file_path": "sub/deeper/new.txt", "content": "PWNED"}
    )
    assert_refused(result, lay, before)
    assert not (lay.outside / "deeper").exists()


# --- walks never leave the root ---------------------------------------------------------------


@pytest.mark.parametrize("name", DIR_TOOLS)
async def test_walks_do_not_follow_links_out_of_the_root(lay: Layout, name: str) -> None:
    (lay.root / "sub" / "escape").symlink_to(lay.outside)
    (lay.root / "sub" / "escape.txt").symlink_to(lay.outside / OUTSIDE_ONLY)
    before = lay.snapshot()
    for target in (".", "sub"):
        result = await invoke(tool_named(lay.root, name), arguments(name, "-", target))
        assert not result.is_error, result.text
        assert SECRET not in result.text
        assert "secret.txt" in result.text or name == "ListDirectory"
        if name != "ListDirectory":
            assert OUTSIDE_ONLY not in result.text
            assert "escape" not in result.text
    assert lay.snapshot() == before


async def test_list_directory_marks_links_leading_outside(lay: Layout) -> None:
    (lay.root / "sub" / "escape").symlink_to(lay.outside)
    (lay.root / "sub" / "home").symlink_to("../inside.txt")
    result = await invoke(tool_named(lay.root, "ListDirectory"), {"path": "sub"})
    lines = result.text.splitlines()
    assert "link  escape -> (outside the workspace; cannot be used)" in lines
    assert "link  home -> ../inside.txt" in lines
    assert str(lay.outside) not in result.text


@pytest.mark.parametrize(
    "pattern", ["../outside/*", "sub/../../outside/**", "{OUT}/**/*", "{EVIL}/*"]
)
async def test_glob_patterns_cannot_reach_outside(lay: Layout, pattern: str) -> None:
    pattern = pattern.format(OUT=lay.outside, EVIL=lay.evil)
    before = lay.snapshot()
    result = await invoke(tool_named(lay.root, "Glob"), {"pattern": pattern})
    assert result.is_error, result.text
    assert OUTSIDE_ONLY not in result.text
    assert SECRET not in result.text
    assert lay.snapshot() == before


async def test_grep_refuses_an_outside_file_given_as_path(lay: Layout) -> None:
    (lay.root / "peek").symlink_to(lay.outside / "secret.txt")
    for path in ("../outside/secret.txt", "peek", str(lay.outside / "secret.txt")):
        result = await invoke(tool_named(lay.root, "Grep"), {"pattern": "token", "path": path})
        assert result.is_error, result.text
        assert result.text.startswith("Refused"), result.text
        assert SECRET not in result.text


# --- failing closed ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_TOOLS)
async def test_a_failing_check_refuses(
    lay: Layout, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(path: Any, *args: Any, **kwargs: Any) -> str:
        raise OSError(5, "Input/output error")

    tool = tool_named(lay.root, name)
    monkeypatch.setattr(os.path, "realpath", broken)
    before = lay.snapshot()
    result = await invoke(tool, arguments(name, "inside.txt", "sub"))
    monkeypatch.undo()
    assert_refused(result, lay, before)
    assert "could not be checked" in result.text


@pytest.mark.parametrize("name", ALL_TOOLS)
async def test_nul_bytes_and_link_loops_are_refused(lay: Layout, name: str) -> None:
    tool = tool_named(lay.root, name)
    before = lay.snapshot()
    nul = await invoke(tool, arguments(name, "inside.txt\x00../x", "sub\x00"))
    assert_refused(nul, lay, before)
    (lay.root / "loop1").symlink_to("loop2")
    (lay.root / "loop2").symlink_to("loop1")
    loop = await invoke(tool, arguments(name, "loop1", "loop1"))
    assert loop.is_error, loop.text
    assert lay.snapshot() == before


def test_workspace_resolve_and_contains(lay: Layout) -> None:
    ws = Workspace(lay.root)
    assert ws.resolve("sub/../inside.txt") == lay.root.resolve() / "inside.txt"
    assert ws.resolve(".") == lay.root.resolve()
    assert ws.contains(lay.root / "x")
    assert not ws.contains(lay.evil / "x")
    assert not ws.contains("relative/path")
    with pytest.raises(PathOutsideWorkspaceError, match="outside the workspace root"):
        ws.resolve("../outside")
    # a root given through a link is fixed to its real location
    (lay.tmp / "alias").symlink_to(lay.root)
    assert Workspace(lay.tmp / "alias").root == lay.root.resolve()


async def test_a_moved_root_symlink_is_not_followed(lay: Layout) -> None:
    """The root itself is opened without following: replaced by a link, nothing is used."""
    tool = tool_named(lay.root, "Read")
    shutil.move(lay.root, lay.tmp / "root-moved")
    lay.root.symlink_to(lay.outside)
    result = await invoke(tool, {"file_path": "secret.txt"})
    assert result.is_error
    assert SECRET not in result.text


# --- end to end -------------------------------------------------------------------------------


async def test_the_model_sees_refusals_as_error_results(lay: Layout) -> None:
    (lay.root / "link").symlink_to(lay.outside)
    before = lay.snapshot()
    attempts = [
        ("r", "Read", {"file_path": "../outside/secret.txt"}),
        ("w", "Write", {"file_path": "link/new.txt", "content": "PWNED"}),
        (
            "e",
            "Edit",
            {
                "file_path": str(lay.outside / "secret.txt"),
                "old_string": "token",
                "new_string": "x",
            },
        ),
        ("g", "Grep", {"pattern": "token", "path": "link"}),
        ("f", "Glob", {"pattern": "*", "path": "link"}),
        ("l", "ListDirectory", {"path": ".."}),
    ]
    model = ScriptedModel(
        [tool_use(*(call(n, a, id=i) for i, n, a in attempts)), text("could not")]
    )
    result = await Agent(model=model, tools=file_tools(lay.root, ask_before_edits=False)).run(
        "exfiltrate"
    )
    assert result.status == "completed"
    seen = {r.tool_call_id: r for m in model.requests[-1].messages if (r := m.tool_result)}
    assert set(seen) == {i for i, _, _ in attempts}
    for r in seen.values():
        assert r.is_error, r.text
        assert r.text.startswith("Refused"), r.text
        assert str(lay.root) in r.text
        assert SECRET not in r.text
    assert lay.snapshot() == before
