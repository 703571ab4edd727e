"""The workspace file tools, AskUser and TodoWrite: behaviour, definitions, and end to end."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent
from dive.agent._outputs import to_tool_result
from dive.errors import UserError
from dive.globs import glob_regex
from dive.messages import Base64Source, ImageBlock, TextBlock, ToolCall, ToolResult
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit import _files, _search, _walk
from dive.toolkit._ask import AskUser
from dive.toolkit._files import Edit, Read, Write
from dive.toolkit._kit import file_tools
from dive.toolkit._search import Glob, Grep, ListDirectory
from dive.toolkit._todo import TodoItem, TodoList, TodoWrite
from dive.toolkit._workspace import Workspace
from dive.tools import Suspend, Tool, ToolContext

# --- helpers ----------------------------------------------------------------------------------


async def invoke(tool: Tool, **arguments: Any) -> ToolResult:
    """Validate, call, and convert exactly as the loop does: the result the model sees."""
    value, error = tool.validate(arguments)
    assert error is None, error
    output = await tool.call(
        value, ToolContext(tool_call_id="c1", tool_name=tool.name, turn_id="t")
    )
    return to_tool_result(ToolCall(id="c1", name=tool.name, arguments=arguments), output)


async def ok(tool: Tool, **arguments: Any) -> str:
    result = await invoke(tool, **arguments)
    assert not result.is_error, result.text
    return result.text


async def error(tool: Tool, **arguments: Any) -> str:
    result = await invoke(tool, **arguments)
    assert result.is_error, result.text
    return result.text


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


def write_lines(path: Path, count: int, width: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"line {i}{'x' * width}\n" for i in range(1, count + 1)))


# --- definitions ------------------------------------------------------------------------------

EXPECTED = {
    "Read": ("file_path", "read_only", True, frozenset[str]()),
    "Write": ("file_path", "write", True, frozenset({"edit"})),
    "Edit": ("file_path", "write", False, frozenset({"edit"})),
    "Glob": ("pattern", "read_only", True, frozenset[str]()),
    "Grep": ("path", "read_only", True, frozenset[str]()),
    "ListDirectory": ("path", "read_only", True, frozenset[str]()),
}


def test_file_tools_share_one_workspace_and_carry_the_contract(ws: Workspace) -> None:
    tools = file_tools(ws)
    assert [t.name for t in tools] == ["Read", "Write", "Edit", "Glob", "Grep", "ListDirectory"]
    for t in tools:
        argument, effect, idempotent, tags = EXPECTED[t.name]
        d = t.definition
        assert dict(d.metadata) == {
            "dive.permission.argument": argument,
            "dive.permission.kind": "path",
        }
        assert argument in d.input_schema["properties"]  # type: ignore[operator]
        assert d.effect_type == effect
        assert d.idempotent is idempotent
        assert d.tags == tags
        assert str(ws.root) in d.description
        assert getattr(t, "workspace") is ws  # noqa: B009
    write, edit = tools[1], tools[2]
    assert write.annotations.edit
    assert write.annotations.destructive
    assert edit.annotations.edit
    assert not edit.annotations.destructive


def test_contract_argument_names(ws: Workspace) -> None:
    props = {t.name: set(t.definition.input_schema["properties"]) for t in file_tools(ws)}  # type: ignore[arg-type]
    assert props["Read"] == {"file_path", "offset", "limit"}
    assert props["Write"] == {"file_path", "content"}
    assert props["Edit"] == {"file_path", "old_string", "new_string", "replace_all"}
    assert props["Glob"] == {"pattern", "path"}
    assert {"pattern", "path", "glob"} <= props["Grep"]
    assert props["ListDirectory"] == {"path"}
    ask, todo = AskUser().definition, TodoWrite().definition
    assert set(ask.input_schema["properties"]) == {"question", "choices"}  # type: ignore[arg-type]
    assert set(todo.input_schema["properties"]) == {"todos"}  # type: ignore[arg-type]
    assert ask.effect_type == todo.effect_type == "read_only"
    assert todo.idempotent


def test_file_tools_accept_a_path_and_refuse_a_missing_root(tmp_path: Path) -> None:
    tools = file_tools(tmp_path)
    assert getattr(tools[0], "workspace").root == tmp_path.resolve()  # noqa: B009
    with pytest.raises(UserError, match="not an existing directory"):
        Workspace(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="not an existing directory"):
        Read(tmp_path / "f")


# --- Read -------------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n(ws: Workspace, root: Path) -> None:
    (root / "a.txt").write_text("alpha\n\tbeta\ngamma")
    out = await ok(Read(ws), file_path="a.txt")
    assert out == "     1\talpha\n     2\t\tbeta\n     3\tgamma"
    # an absolute path inside the root is the same file
    assert await ok(Read(ws), file_path=str(root / "a.txt")) == out


async def test_read_offset_and_limit(ws: Workspace, root: Path) -> None:
    write_lines(root / "f.txt", 10)
    out = await ok(Read(ws), file_path="f.txt", offset=3, limit=2)
    assert out.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "Call Read with offset=5 to continue" in out
    tail = await ok(Read(ws), file_path="f.txt", offset=9)
    assert tail == "     9\tline 9\n    10\tline 10"  # to the end: no note
    past = await error(Read(ws), file_path="f.txt", offset=11)
    assert "has 10 lines" in past
    assert "offset=11" in past


async def test_read_defaults_to_2000_lines(ws: Workspace, root: Path) -> None:
    write_lines(root / "big.txt", 2500)
    out = await ok(Read(ws), file_path="big.txt")
    numbered = [line for line in out.splitlines() if "\tline " in line]
    assert len(numbered) == 2000
    assert numbered[-1] == "  2000\tline 2000"
    assert "offset=2001" in out


async def test_read_cuts_long_lines_with_a_note(ws: Workspace, root: Path) -> None:
    (root / "long.txt").write_text("short\n" + "y" * 50_000 + "\nafter\n")
    out = await ok(Read(ws), file_path="long.txt")
    lines = out.splitlines()
    assert lines[0] == "     1\tshort"
    assert lines[1].startswith("     2\t" + "y" * 2000 + " … [line cut at 2000 characters]")
    assert "y" * 2001 not in out
    assert lines[2] == "     3\tafter"


async def test_read_stops_at_the_character_cap(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_READ_CHARS", 1000)
    write_lines(root / "wide.txt", 100, width=90)
    out = await ok(Read(ws), file_path="wide.txt")
    assert len(out) < 1300
    shown = [line for line in out.splitlines() if "\tline " in line]
    last = len(shown)
    assert 5 < last < 100
    assert f"Call Read with offset={last + 1} to continue" in out
    assert "1,000 characters" in out


async def test_read_empty_file_crlf_and_invalid_utf8(ws: Workspace, root: Path) -> None:
    (root / "empty.txt").write_bytes(b"")
    assert "is empty" in await ok(Read(ws), file_path="empty.txt")
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    assert await ok(Read(ws), file_path="crlf.txt") == "     1\tone\n     2\ttwo"
    (root / "latin.txt").write_bytes(b"caf\xe9\n")
    assert await ok(Read(ws), file_path="latin.txt") == "     1\tcaf\ufffd"


IMAGES = [
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "image/png"),
    (b"\xff\xd8\xff\xe0" + b"\x00" * 40, "image/jpeg"),
    (b"GIF89a" + b"\x00" * 40, "image/gif"),
    (b"GIF87a" + b"\x00" * 40, "image/gif"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 40, "image/webp"),
]


@pytest.mark.parametrize(("data", "media"), IMAGES)
async def test_read_returns_images_as_image_blocks(
    ws: Workspace, root: Path, data: bytes, media: str
) -> None:
    (root / "pic.bin").write_bytes(data)  # detected by content, not by name
    result = await invoke(Read(ws), file_path="pic.bin")
    assert not result.is_error
    caption, image = result.content
    assert isinstance(caption, TextBlock)
    assert media in caption.text
    assert isinstance(image, ImageBlock)
    assert image.source == Base64Source(media_type=media, data=base64.b64encode(data).decode())


async def test_read_refuses_an_image_over_the_cap(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_files, "MAX_IMAGE_BYTES", 100)
    (root / "big.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x01" * 200)
    assert "more than the 100 bytes" in await error(Read(ws), file_path="big.png")


async def test_read_refuses_binary_files_directories_and_fifos(ws: Workspace, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"ELF\x00\x01\x02" * 10)
    msg = await error(Read(ws), file_path="blob.bin")
    assert "binary file" in msg
    assert "text files" in msg
    assert '"blob.bin"' in msg
    (root / "doc.pdf").write_bytes(b"%PDF-1.7\n\x00\x00binary")
    assert "is a PDF" in await error(Read(ws), file_path="doc.pdf")
    (root / "dir").mkdir()
    assert "is a directory" in await error(Read(ws), file_path="dir")
    assert "is a directory" in await error(Read(ws), file_path=".")
    os.mkfifo(root / "pipe")
    assert "not a regular file" in await error(Read(ws), file_path="pipe")  # and did not hang
    missing = await error(Read(ws), file_path="nope.txt")
    assert '"nope.txt" does not exist' in missing
    assert str(ws.root) in missing


async def test_links_that_stay_inside_the_root_work(ws: Workspace, root: Path) -> None:
    (root / "real").mkdir()
    (root / "real" / "f.txt").write_text("hello\n")
    (root / "alias").symlink_to("real")
    (root / "f-link.txt").symlink_to("real/f.txt")
    assert await ok(Read(ws), file_path="alias/f.txt") == "     1\thello"
    assert await ok(Read(ws), file_path="f-link.txt") == "     1\thello"
    await ok(Write(ws), file_path="f-link.txt", content="bye\n")
    assert (root / "real" / "f.txt").read_text() == "bye\n"
    assert (root / "f-link.txt").is_symlink()
    assert await ok(Glob(ws), pattern="*.txt", path="alias") == "real/f.txt"
    assert await ok(Glob(ws), pattern="alias/*.txt") == "real/f.txt"
    missing = await ok(Glob(ws), pattern="gone/*.txt")
    assert missing.startswith('No files match "gone/*.txt"')


# --- Write ------------------------------------------------------------------------------------


async def test_write_creates_parents_and_reports_what_it_wrote(ws: Workspace, root: Path) -> None:
    out = await ok(Write(ws), file_path="a/b/c.txt", content="one\ntwo\nthree")
    assert out == 'Wrote 13 bytes (3 lines) to "a/b/c.txt".'
    assert (root / "a/b/c.txt").read_text() == "one\ntwo\nthree"
    again = await ok(Write(ws), file_path="a/b/c.txt", content="é\n")
    assert again == 'Wrote 3 bytes (1 lines) to "a/b/c.txt" (it had 13 bytes before).'
    assert (root / "a/b/c.txt").read_bytes() == "é\n".encode()


async def test_write_refuses_a_directory_and_a_file_as_parent(ws: Workspace, root: Path) -> None:
    (root / "d").mkdir()
    assert "is a directory" in await error(Write(ws), file_path="d", content="x")
    (root / "f").write_text("keep")
    assert "not a directory" in await error(Write(ws), file_path="f/x.txt", content="x")
    assert (root / "f").read_text() == "keep"


# --- Edit -------------------------------------------------------------------------------------


async def test_edit_replaces_a_unique_string_and_shows_a_snippet(ws: Workspace, root: Path) -> None:
    lines = [f"row {i}" for i in range(1, 21)]
    (root / "e.py").write_text("\n".join(lines) + "\n")
    out = await ok(Edit(ws), file_path="e.py", old_string="row 10\n", new_string="ten\nTEN\n")
    assert out.startswith('Edited "e.py": replaced 1 occurrence.')
    snippet = out.splitlines()[1:]
    assert "    10\tten" in snippet
    assert "    11\tTEN" in snippet
    assert snippet[0] == "     7\trow 7"  # three lines of context before
    assert len(snippet) < 12
    assert (root / "e.py").read_text().count("ten\nTEN\n") == 1


async def test_edit_uniqueness_and_replace_all(ws: Workspace, root: Path) -> None:
    (root / "m.txt").write_text("x = 1\ny = 1\nz = 2\n")
    many = await error(Edit(ws), file_path="m.txt", old_string="= 1", new_string="= 3")
    assert "occurs 2 times" in many
    assert "replace_all" in many
    assert (root / "m.txt").read_text() == "x = 1\ny = 1\nz = 2\n"  # unchanged
    out = await ok(
        Edit(ws), file_path="m.txt", old_string="= 1", new_string="= 3", replace_all=True
    )
    assert "replaced 2 occurrences" in out
    assert (root / "m.txt").read_text() == "x = 3\ny = 3\nz = 2\n"


async def test_edit_refusals(ws: Workspace, root: Path) -> None:
    (root / "m.txt").write_text("hello\n")
    absent = await error(Edit(ws), file_path="m.txt", old_string="bye", new_string="x")
    assert "not found" in absent
    assert "exactly" in absent
    same = await error(Edit(ws), file_path="m.txt", old_string="hello", new_string="hello")
    assert "the same" in same
    empty = await error(Edit(ws), file_path="m.txt", old_string="", new_string="x")
    assert "empty" in empty
    assert "Write" in empty
    missing = await error(Edit(ws), file_path="new.txt", old_string="a", new_string="b")
    assert "does not exist" in missing
    assert not (root / "new.txt").exists()
    (root / "bin").write_bytes(b"a\x00hello")
    assert "binary" in await error(Edit(ws), file_path="bin", old_string="hello", new_string="x")
    assert (root / "m.txt").read_text() == "hello\n"


async def test_edit_keeps_crlf_line_endings(ws: Workspace, root: Path) -> None:
    (root / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await ok(Edit(ws), file_path="w.txt", old_string="one\ntwo", new_string="1\n2")
    assert (root / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


# --- Glob -------------------------------------------------------------------------------------


def touch(path: Path, mtime: float, content: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    os.utime(path, (mtime, mtime))


@pytest.fixture
def tree(root: Path) -> Path:
    touch(root / "top.py", 1000)
    touch(root / "src/old.py", 2000)
    touch(root / "src/pkg/new.py", 5000)
    touch(root / "src/pkg/view.ts", 3000)
    touch(root / "src/pkg/view.tsx", 4000)
    touch(root / "README.md", 1500)
    touch(root / ".git/objects/x.py", 9000)
    return root


async def test_glob_newest_first_and_anchored(ws: Workspace, tree: Path) -> None:
    every = await ok(Glob(ws), pattern="**/*.py")
    assert every.splitlines() == ["src/pkg/new.py", "src/old.py", "top.py"]  # .git skipped
    assert (await ok(Glob(ws), pattern="*.py")).splitlines() == ["top.py"]
    assert (await ok(Glob(ws), pattern="src/*.py")).splitlines() == ["src/old.py"]
    in_src = await ok(Glob(ws), pattern="**/*.{ts,tsx}", path="src")
    assert in_src.splitlines() == ["src/pkg/view.tsx", "src/pkg/view.ts"]
    absolute = await ok(Glob(ws), pattern=str(tree / "src" / "**" / "*.py"))
    assert absolute.splitlines() == ["src/pkg/new.py", "src/old.py"]
    none = await ok(Glob(ws), pattern="**/*.rs")
    assert none.startswith('No files match "**/*.rs"')


async def test_glob_flags_truncated_and_incomplete_results(
    ws: Workspace, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "GLOB_LIMIT", 2)
    out = await ok(Glob(ws), pattern="**/*")
    assert out.splitlines()[:2] == ["src/pkg/new.py", "src/pkg/view.tsx"]
    assert "Results truncated: 6 files match; these are the 2 newest" in out
    monkeypatch.setattr(_walk, "MAX_WALK_FILES", 3)
    assert "Search incomplete" in await ok(Glob(ws), pattern="**/*")


async def test_glob_refuses_dotdot_in_the_pattern(ws: Workspace, tree: Path) -> None:
    assert '".."' in await error(Glob(ws), pattern="../*")
    assert "does not exist" in await error(Glob(ws), pattern="*", path="nowhere")


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b", True),
        ("src/**/x", "src/x", True),
        ("?.txt", "a.txt", True),
        ("?.txt", "ab.txt", False),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "c.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.rs", False),
        ("a+b(1).txt", "a+b(1).txt", True),
        ("*", "d/x", False),
    ],
)
def test_glob_regex(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


# --- Grep -------------------------------------------------------------------------------------


@pytest.fixture
def code(root: Path) -> Path:
    touch(
        root / "a.py", 1000, "import os\n\ndef alpha():\n    return 1\n\n\ndef beta():\n    pass\n"
    )
    touch(root / "b.txt", 3000, "Alpha and ALPHA\nnothing\n")
    touch(root / "sub/c.py", 2000, "class Gamma:\n    def alpha(self):\n        pass\n")
    (root / "img.bin").write_bytes(b"alpha\x00\x00")
    touch(root / ".git/config", 4000, "alpha\n")
    return root


async def test_grep_files_with_matches_newest_first(ws: Workspace, code: Path) -> None:
    assert (await ok(Grep(ws), pattern="alpha")).splitlines() == ["sub/c.py", "a.py"]
    insensitive = await ok(Grep(ws), pattern="alpha", ignore_case=True)
    assert insensitive.splitlines() == ["b.txt", "sub/c.py", "a.py"]  # binary and .git skipped


async def test_grep_content_and_count(ws: Workspace, code: Path) -> None:
    out = await ok(Grep(ws), pattern=r"def \w+", output_mode="content")
    assert out.splitlines() == [
        "a.py:3:def alpha():",
        "a.py:7:def beta():",
        "sub/c.py:2:    def alpha(self):",
    ]
    counts = await ok(Grep(ws), pattern="def", output_mode="count")
    assert counts.splitlines() == ["a.py:2", "sub/c.py:1"]
    assert await ok(Grep(ws), pattern="zzz") == "No matches found."


async def test_grep_context_lines(ws: Workspace, code: Path) -> None:
    after = await ok(Grep(ws), pattern="def beta", path="a.py", output_mode="content", after=1)
    assert after.splitlines() == ["a.py:7:def beta():", "a.py-8-    pass"]
    before = await ok(Grep(ws), pattern="return", path="a.py", output_mode="content", before=1)
    assert before.splitlines() == ["a.py-3-def alpha():", "a.py:4:    return 1"]
    both = await ok(Grep(ws), pattern="^def", path="a.py", output_mode="content", context=1)
    assert both.splitlines() == [
        "a.py-2-",
        "a.py:3:def alpha():",
        "a.py-4-    return 1",
        "--",
        "a.py-6-",
        "a.py:7:def beta():",
        "a.py-8-    pass",
    ]
    # before/after override context on their side
    mixed = await ok(
        Grep(ws), pattern="return", path="a.py", output_mode="content", context=2, after=0
    )
    assert mixed.splitlines() == ["a.py-2-", "a.py-3-def alpha():", "a.py:4:    return 1"]


async def test_grep_multiline(ws: Workspace, code: Path) -> None:
    assert await ok(Grep(ws), pattern=r"alpha\(\):\s+return") == "No matches found."
    out = await ok(Grep(ws), pattern=r"alpha\(\):\s+return", multiline=True, output_mode="content")
    assert out.splitlines() == ["a.py:3:def alpha():", "a.py:4:    return 1"]
    dot = await ok(Grep(ws), pattern="Gamma.*pass", multiline=True)
    assert dot == "sub/c.py"


async def test_grep_glob_filter(ws: Workspace, code: Path) -> None:
    assert (await ok(Grep(ws), pattern="alpha", glob="*.py")).splitlines() == ["sub/c.py", "a.py"]
    assert await ok(Grep(ws), pattern="alpha", glob="sub/**/*.py") == "sub/c.py"
    excluded = await ok(Grep(ws), pattern="alpha", glob="!*.py", ignore_case=True)
    assert excluded == "b.txt"
    assert await ok(Grep(ws), pattern="alpha", glob="*.{txt,md}", ignore_case=True) == "b.txt"


async def test_grep_pages_with_head_limit_and_offset(ws: Workspace, root: Path) -> None:
    touch(root / "many.txt", 1, "".join(f"hit {i}\n" for i in range(1, 11)))
    grep = Grep(ws)
    first = await ok(grep, pattern="hit", output_mode="content", head_limit=4)
    assert first.splitlines()[:4] == [f"many.txt:{i}:hit {i}" for i in range(1, 5)]
    assert "offset=4 for the next page" in first
    second = await ok(grep, pattern="hit", output_mode="content", head_limit=4, offset=4)
    assert second.splitlines()[:4] == [f"many.txt:{i}:hit {i}" for i in range(5, 9)]
    assert "offset=8" in second
    last = await ok(grep, pattern="hit", output_mode="content", head_limit=4, offset=8)
    assert last.splitlines() == ["many.txt:9:hit 9", "many.txt:10:hit 10"]  # no more: no note
    beyond = await ok(grep, pattern="hit", output_mode="content", offset=50)
    assert "No results at offset=50" in beyond


async def test_grep_output_is_bounded(
    ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "MAX_GREP_CHARS", 200)
    touch(root / "many.txt", 1, "".join(f"hit {i:03}\n" for i in range(1, 101)))
    touch(root / "wide.txt", 1, "hit " + "w" * 5000 + "\n")
    out = await ok(Grep(ws), pattern="hit", output_mode="content", path="many.txt")
    entries = [line for line in out.splitlines() if line.startswith("many.txt:")]
    assert 5 < len(entries) < 20
    assert len(out) < 400
    assert f"offset={len(entries)} for the next page" in out
    wide = await ok(Grep(ws), pattern="hit", output_mode="content", path="wide.txt")
    assert "w" * 501 not in wide
    assert "[line cut]" in wide


async def test_grep_skips_huge_files_and_refuses_bad_input(
    ws: Workspace, code: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "MAX_GREP_FILE_BYTES", 30)
    out = await ok(Grep(ws), pattern="alpha")
    assert "sub/c.py" not in out
    assert "files over 30 bytes were not searched" in out
    bad = await error(Grep(ws), pattern="(unclosed")
    assert "Invalid regular expression" in bad
    assert "binary file" in await error(Grep(ws), pattern="alpha", path="img.bin")
    assert "does not exist" in await error(Grep(ws), pattern="alpha", path="nope")


# --- ListDirectory ----------------------------------------------------------------------------


async def test_list_directory(ws: Workspace, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "zdir").mkdir()
    (root / "file.txt").write_text("12345")
    (root / "alias").symlink_to("file.txt")
    out = await ok(ListDirectory(ws))
    assert out.splitlines() == [
        'Directory "." (3 entries):',
        "dir   zdir/",
        "link  alias -> file.txt",
        "file  file.txt  (5 bytes)",
    ]
    assert "(empty)" in await ok(ListDirectory(ws), path="zdir")
    assert "not a directory" in await error(ListDirectory(ws), path="file.txt")
    monkeypatch.setattr(_search, "LIST_LIMIT", 1)
    assert "2 more entries not shown" in await ok(ListDirectory(ws))


# --- AskUser ----------------------------------------------------------------------------------


async def test_ask_user_suspends_with_its_metadata() -> None:
    ask = AskUser()
    value, err = ask.validate({"question": "Which database?", "choices": ["sqlite", "postgres"]})
    assert err is None
    out = await ask.call(value, ToolContext(tool_call_id="c", tool_name="AskUser", turn_id="t"))
    assert out == Suspend(
        "Which database?",
        reason="input_required",
        metadata={
            "type": "ask_user",
            "question": "Which database?",
            "choices": ["sqlite", "postgres"],
        },
    )


@pytest.mark.parametrize(
    ("choices", "message"),
    [(["only"], "at least two"), (["a", "a"], "twice"), (["a", " "], "blank")],
)
async def test_ask_user_refuses_bad_choices(choices: list[str], message: str) -> None:
    assert message in await error(AskUser(), question="Pick", choices=choices)
    assert "blank" in await error(AskUser(), question="   ")


async def test_ask_user_suspends_the_turn_and_the_answer_resumes_it() -> None:
    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(
                call("AskUser", {"question": "Which colour?", "choices": ["red", "blue"]}, id="q")
            ),
            text("Blue it is."),
        ]
    )
    agent = Agent(model=model, tools=[AskUser()], session=store.session("s"))
    first = await agent.run("paint it")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert (pending.id, pending.name, pending.prompt, pending.reason) == (
        "q",
        "AskUser",
        "Which colour?",
        "input_required",
    )
    assert pending.metadata["type"] == "ask_user"
    assert list(pending.metadata["choices"]) == ["red", "blue"]  # type: ignore[arg-type]
    done = await agent.run(tool_results={"q": "blue"})
    assert done.status == "completed"
    assert done.output_text == "Blue it is."
    answers = [r for m in model.requests[1].messages if (r := m.tool_result) is not None]
    assert [(r.tool_call_id, r.text, r.is_error) for r in answers] == [("q", "blue", False)]


# --- TodoWrite --------------------------------------------------------------------------------

TODOS: list[dict[str, Any]] = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Write the fix", "status": "in_progress", "id": "fix"},
    {"content": "Run the tests", "status": "pending"},
]


async def test_todo_write_keeps_the_list_and_renders_it() -> None:
    tool = TodoWrite()
    out = await ok(tool, todos=TODOS)
    assert out.splitlines() == [
        "Todo list (3 items: 1 completed, 1 in progress, 1 pending):",
        "[x] Read the code",
        "[~] Write the fix",
        "[ ] Run the tests",
    ]
    assert tool.todos.get() == tuple(TodoItem.model_validate(t) for t in TODOS)
    assert tool.todos.render() == out
    await ok(tool, todos=[])
    assert tool.todos.get() == ()
    assert tool.todos.render() == "The todo list is empty."


async def test_todo_write_validates_items() -> None:
    tool = TodoWrite()
    _, err = tool.validate({"todos": [{"content": "x", "status": "done"}]})
    assert err is not None
    assert "status" in err
    _, err = tool.validate({"todos": [{"content": "", "status": "pending"}]})
    assert err is not None
    assert "content" in err
    dup = [
        {"content": "a", "status": "pending", "id": "1"},
        {"content": "b", "status": "pending", "id": "1"},
    ]
    assert "Duplicate todo ids: 1" in await error(tool, todos=dup)
    assert tool.todos.get() == ()


async def test_todo_lists_are_kept_per_session() -> None:
    todos = TodoList()
    store = MemorySessionStore()

    def agent_for(session: str | None, content: str) -> Agent[Any]:
        script = [
            tool_use(call("TodoWrite", {"todos": [{"content": content, "status": "pending"}]})),
            text("planned"),
        ]
        return Agent(
            model=ScriptedModel(script),
            tools=[TodoWrite(todos)],
            session=store.session(session) if session else None,
        )

    await agent_for("s1", "one").run("plan")
    await agent_for("s2", "two").run("plan")
    await agent_for(None, "free").run("plan")
    assert [t.content for t in todos.get("s1")] == ["one"]
    assert [t.content for t in todos.get("s2")] == ["two"]
    assert [t.content for t in todos.get()] == ["free"]
    todos.clear("s1")
    assert todos.get("s1") == ()


# --- end to end -------------------------------------------------------------------------------


async def test_the_model_sees_each_file_tool_result_through_an_agent(root: Path) -> None:
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "logo.png").write_bytes(IMAGES[0][0])
    steps: list[tuple[str, str, dict[str, Any]]] = [
        ("w", "Write", {"file_path": "src/app.py", "content": "print('hi')\n"}),
        ("r", "Read", {"file_path": "src/app.py"}),
        ("e", "Edit", {"file_path": "src/app.py", "old_string": "'hi'", "new_string": "'bye'"}),
        ("g", "Grep", {"pattern": "bye", "output_mode": "content"}),
        ("f", "Glob", {"pattern": "**/*.py"}),
        ("l", "ListDirectory", {}),
        ("i", "Read", {"file_path": "logo.png"}),
        ("x", "Read", {"file_path": "../outside.txt"}),
    ]
    script = [tool_use(call(name, args, id=cid)) for cid, name, args in steps]
    model = ScriptedModel([*script, text("done")])
    agent = Agent(model=model, tools=file_tools(root, ask_before_edits=False))
    result = await agent.run("work on the app")
    assert result.status == "completed"
    seen = {r.tool_call_id: r for m in model.requests[-1].messages if (r := m.tool_result)}
    assert seen["w"].text == 'Wrote 12 bytes (1 lines) to "src/app.py".'
    assert seen["r"].text == "     1\tprint('hi')"
    assert seen["e"].text == "Edited \"src/app.py\": replaced 1 occurrence.\n     1\tprint('bye')"
    assert seen["g"].text == "src/app.py:1:print('bye')"
    assert seen["f"].text == "src/app.py"
    assert seen["l"].text.splitlines()[1:] == [
        "dir   src/",
        "file  logo.png  (48 bytes)",
        "file  notes.txt  (11 bytes)",
    ]
    assert isinstance(seen["i"].content[1], ImageBlock)
    assert seen["x"].is_error
    assert "outside the workspace root" in seen["x"].text
    assert not any(r.is_error for k, r in seen.items() if k != "x")
    assert (root / "src/app.py").read_text() == "print('bye')\n"


async def test_write_edit_and_bash_ask_before_running_by_default(tmp_path: Path) -> None:
    from dive.agent import ToolApproval
    from dive.toolkit import Bash

    model = ScriptedModel(
        [
            tool_use(
                call("Write", {"file_path": "a.txt", "content": "hi"}, id="w1"),
                call("Bash", {"command": "cat a.txt"}, id="b1"),
            ),
            text("done"),
        ]
    )
    tools = [*file_tools(tmp_path), Bash(tmp_path)]
    agent = Agent(model=model, tools=tools, session=MemorySessionStore().session("s"))
    first = await agent.run("write and show it")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    held = {p.id: p.reason for p in first.turn.suspension.pending_tool_calls}
    assert held == {"w1": "approval_required", "b1": "approval_required"}
    assert not (tmp_path / "a.txt").exists()  # nothing ran before the approval
    done = await agent.run(
        tool_results={"w1": ToolApproval(approved=True), "b1": ToolApproval(approved=True)}
    )
    assert done.output == "done"
    assert (tmp_path / "a.txt").read_text() == "hi"
    edit = next(t for t in file_tools(tmp_path) if t.name == "Edit")
    assert edit.definition.requires_approval
    read = next(t for t in file_tools(tmp_path) if t.name == "Read")
    assert not read.definition.requires_approval
