"""``Read``, ``Write`` and ``Edit``: file tools confined to a :class:`Workspace`.

Every path goes through the :class:`Workspace` check and is opened without following
symbolic links, so each tool reads through one descriptor of a file that is inside the root.
``Write`` and ``Edit`` never write a file in place: the new content goes to a temporary file
in the same directory (opened through the directory's descriptor), which is synced and then
renamed over the old name (:func:`~dive.toolkit._workspace.replace_at`), so a full disk or an
I/O error halfway leaves the old content whole. A refused or failing path is an ``is_error``
result naming the path and the root; nothing a tool does raises out of the call.

Annotations (what the permission engine and the loop read):

- ``Read`` — read-only and idempotent.
- ``Write`` — ``edit`` (tag ``"edit"``), destructive (it replaces a file) and idempotent.
- ``Edit`` — ``edit`` (tag ``"edit"``), not destructive, not idempotent.

Each carries ``dive.permission.argument = "file_path"`` and ``dive.permission.kind = "path"``.
"""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Iterator
from typing import Annotated, BinaryIO

from pydantic import Field

from dive.messages import Base64Source, ImageBlock, TextBlock
from dive.toolkit._workspace import Workspace, WorkspaceError, replace_at
from dive.tools import FunctionTool, ToolAnnotations, ToolReturn

__all__ = ["Edit", "Read", "Write"]

PERMISSION_ARGUMENT = "dive.permission.argument"
PERMISSION_KIND = "dive.permission.kind"

DEFAULT_LINE_LIMIT = 2000
"""Lines ``Read`` returns when no ``limit`` is given."""
MAX_LINE_CHARS = 2000
"""A longer line is cut, with a note, in ``Read``'s output."""
MAX_READ_CHARS = 100_000
"""``Read`` stops at a line boundary once its output reaches this many characters."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image ``Read`` returns (what model APIs accept)."""
MAX_EDIT_BYTES = 10 * 1024 * 1024
"""The largest file ``Edit`` changes."""
SNIFF_BYTES = 8192
"""How much of a file is looked at to tell text, image and binary apart."""

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def as_workspace(workspace: Workspace | str | os.PathLike[str]) -> Workspace:
    """``workspace`` itself, or a :class:`Workspace` rooted at the path given."""
    return workspace if isinstance(workspace, Workspace) else Workspace(workspace)


def path_metadata(argument: str) -> dict[str, str]:
    """The definition metadata the permission engine matches path rules on."""
    return {PERMISSION_ARGUMENT: argument, PERMISSION_KIND: "path"}


def fail(text: str) -> ToolReturn:
    """An ``is_error`` result the model sees."""
    return ToolReturn(content=text, is_error=True)


def image_type(head: bytes) -> str | None:
    """The media type of a PNG, JPEG, GIF or WebP file from its first bytes, or None."""
    for magic, media in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_binary(head: bytes) -> bool:
    """A NUL byte among the first bytes marks a binary file (ripgrep's rule)."""
    return b"\x00" in head


def line_count(text: str) -> int:
    """Lines in ``text`` (a last line without a newline counts)."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def numbered(number: int, line: str) -> str:
    """One line in ``cat -n`` style: the number right-aligned in six columns, a tab, the text."""
    return f"{number:>6}\t{line}"


def open_regular(
    ws: Workspace, path: str, flags: int = os.O_RDONLY, *, parents: bool = False
) -> tuple[int, os.stat_result] | ToolReturn:
    """A descriptor of a regular file in ``ws`` and its status, or the error result."""
    try:
        fd = ws.open(path, flags, 0o666, parents=parents)
    except WorkspaceError as exc:
        return fail(str(exc))
    return regular(fd, path)


def regular(fd: int, path: str) -> tuple[int, os.stat_result] | ToolReturn:
    """``fd`` and its status if it is a regular file; else it is closed and the error given."""
    shown = f'"{path}"'
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return fail(f"Could not read {shown}: {exc.strerror or exc}.")
    if stat.S_ISREG(st.st_mode):
        return fd, st
    os.close(fd)
    if stat.S_ISDIR(st.st_mode):
        return fail(f"{shown} is a directory, not a file; use ListDirectory or Glob to see it.")
    return fail(f"{shown} is not a regular file (a device, socket or FIFO); it cannot be used.")


def replace_file(
    dir_fd: int, name: str, data: bytes, old: os.stat_result | None, path: str
) -> ToolReturn | None:
    """Put ``data`` in place of ``name`` all at once (:func:`replace_at`).

    Returns None, or the error result when it failed (then the file was not changed).
    """
    try:
        replace_at(dir_fd, name, data, old)
    except OSError as exc:
        return fail(f'Could not write "{path}": {exc.strerror or exc}; the file was not changed.')
    return None


def open_for_replace(
    ws: Workspace, path: str, flags: int, *, create: bool
) -> tuple[int, str, int | None, os.stat_result | None] | ToolReturn:
    """``(directory fd, name, file fd, status)`` of the file to replace, or the error.

    The file is opened with ``flags`` (``O_WRONLY`` or ``O_RDWR``, never truncating), so a
    file this user may not write is refused as before, though it is replaced, not written.
    The file fd and status are None when the file does not exist and ``create`` is set
    (missing parent directories are then created too). The caller closes both descriptors.
    """
    try:
        dir_fd, name = ws.open_parent(path, parents=create)
    except WorkspaceError as exc:
        return fail(str(exc))
    try:
        fd = ws.open_entry(dir_fd, name, flags, shown=path)
    except WorkspaceError as exc:
        missing = create and _missing(dir_fd, name)
        if not missing:
            os.close(dir_fd)
            return fail(str(exc))
        return dir_fd, name, None, None
    checked = regular(fd, path)
    if isinstance(checked, ToolReturn):
        os.close(dir_fd)
        return checked
    return dir_fd, name, checked[0], checked[1]


def _missing(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


# --- Read -------------------------------------------------------------------------------------

_READ_DESCRIPTION = """\
Read a file from the workspace ({root}).

- file_path is relative to the workspace root, or absolute inside it. Paths outside the root,
  and symbolic links leading out of it, are refused.
- Text comes back with line numbers, cat -n style: the number, a tab, then the line. The
  numbers and tab are not part of the file: leave them out of Edit's old_string.
- By default up to {limit} lines from the start. For long files pass offset (the 1-based
  line to start at) and limit (how many lines). The result says when there is more and which
  offset continues.
- Lines longer than {line_chars} characters are cut, with a note.
- PNG, JPEG, GIF and WebP images are returned as images you can see.
- Other binary files are refused; directories too (use ListDirectory or Glob).
"""


class Read(FunctionTool):
    """``Read(file_path, offset=None, limit=None)``: a text file's lines, or an image.

    Annotated read-only and idempotent; permission metadata argument ``file_path``, kind
    ``path``.

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
    """

    def __init__(self, workspace: Workspace | str | os.PathLike[str]) -> None:
        self.workspace = as_workspace(workspace)
        super().__init__(
            self._read,
            name="Read",
            description=_READ_DESCRIPTION.format(
                root=self.workspace.root, limit=DEFAULT_LINE_LIMIT, line_chars=MAX_LINE_CHARS
            ),
            annotations=ToolAnnotations(title="Read file", read_only=True, idempotent=True),
            metadata=path_metadata("file_path"),
        )

    def _read(
        self,
        file_path: Annotated[
            str, Field(description="The file to read: relative to the workspace root.")
        ],
        offset: Annotated[
            int | None, Field(ge=1, description="The 1-based line number to start at.")
        ] = None,
        limit: Annotated[
            int | None,
            Field(ge=1, description=f"How many lines to read (default {DEFAULT_LINE_LIMIT})."),
        ] = None,
    ) -> ToolReturn | list[TextBlock | ImageBlock]:
        opened = open_regular(self.workspace, file_path)
        if isinstance(opened, ToolReturn):
            return opened
        fd, st = opened
        shown = f'"{file_path}"'
        with os.fdopen(fd, "rb") as f:
            head = f.read(SNIFF_BYTES)
            media = image_type(head)
            if media is not None:
                return _image(f, head, media, st.st_size, shown)
            if is_binary(head):
                kind = "a PDF" if head.startswith(b"%PDF-") else "a binary file"
                return fail(
                    f"{shown} is {kind} ({st.st_size:,} bytes). Read shows text files and "
                    "PNG, JPEG, GIF or WebP images only."
                )
            f.seek(0)
            return _lines(f, shown, offset or 1, limit or DEFAULT_LINE_LIMIT)


def _image(
    f: BinaryIO, head: bytes, media: str, size: int, shown: str
) -> ToolReturn | list[TextBlock | ImageBlock]:
    if size > MAX_IMAGE_BYTES:
        return fail(
            f"{shown} is an image of {size:,} bytes, more than the {MAX_IMAGE_BYTES:,} bytes "
            "Read returns; make a smaller copy first."
        )
    data = head + f.read(MAX_IMAGE_BYTES + 1 - len(head))
    if len(data) > MAX_IMAGE_BYTES:
        return fail(f"{shown} grew past {MAX_IMAGE_BYTES:,} bytes while it was read.")
    encoded = base64.b64encode(data).decode("ascii")
    return [
        TextBlock(text=f"Image {shown} ({media}, {len(data):,} bytes):"),
        ImageBlock(source=Base64Source(media_type=media, data=encoded)),
    ]


def _raw_lines(f: BinaryIO) -> Iterator[tuple[str, bool]]:
    """``(line without its newline, cut)``; a line is read at most ~4 x MAX_LINE_CHARS bytes."""
    cap = 4 * MAX_LINE_CHARS + 4
    while True:
        chunk = f.readline(cap)
        if not chunk:
            return
        cut = False
        if not chunk.endswith(b"\n") and len(chunk) == cap:
            cut = True
            while True:  # skip the rest of the line
                more = f.readline(1 << 16)
                if not more or more.endswith(b"\n"):
                    break
        text = chunk.decode("utf-8", errors="replace").removesuffix("\n").removesuffix("\r")
        if len(text) > MAX_LINE_CHARS:
            text, cut = text[:MAX_LINE_CHARS], True
        yield text, cut


def _lines(f: BinaryIO, shown: str, offset: int, limit: int) -> ToolReturn:
    out: list[str] = []
    size = 0
    number = 0
    last = offset - 1
    more = False
    cut_by_size = False
    for number, (text, cut) in enumerate(_raw_lines(f), start=1):
        if number < offset:
            continue
        if number >= offset + limit:
            more = True
            break
        line = numbered(number, text)
        if cut:
            line += f" … [line cut at {MAX_LINE_CHARS} characters]"
        if out and size + len(line) + 1 > MAX_READ_CHARS:
            more = cut_by_size = True
            break
        out.append(line)
        size += len(line) + 1
        last = number
    if number == 0:
        return ToolReturn(content=f"{shown} is empty (0 lines).")
    if not out:
        return fail(
            f"{shown} has {number:,} lines; offset={offset} is past the end. Use a smaller offset."
        )
    if more:
        why = f"output reached {MAX_READ_CHARS:,} characters" if cut_by_size else "limit reached"
        out.append(
            f"\n[Showing lines {offset}-{last} ({why}); the file has more. "
            f"Call Read with offset={last + 1} to continue.]"
        )
    return ToolReturn(content="\n".join(out))


# --- Write ------------------------------------------------------------------------------------

_WRITE_DESCRIPTION = """\
Write a file in the workspace ({root}), creating it or replacing all of its content.

- file_path is relative to the workspace root, or absolute inside it; missing parent
  directories are created (inside the root only). Paths outside the root, and symbolic links
  leading out of it, are refused.
- content is written exactly as given (UTF-8), so include the final newline if the file
  should end with one.
- This overwrites an existing file completely. To change part of a file, prefer Edit.
"""


class Write(FunctionTool):
    """``Write(file_path, content)``: create or overwrite a file.

    Annotated ``edit`` (tag ``"edit"``, so ``accept_edits`` can allow it), destructive and
    idempotent; permission metadata argument ``file_path``, kind ``path``. It asks before
    writing (``requires_approval``) unless told not to.

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
        requires_approval: ask before each write (the approval gate, or the permission
            engine's rules and mode); ``False`` lets every write run.
    """

    def __init__(
        self, workspace: Workspace | str | os.PathLike[str], *, requires_approval: bool = True
    ) -> None:
        self.workspace = as_workspace(workspace)
        super().__init__(
            self._write,
            requires_approval=requires_approval,
            name="Write",
            description=_WRITE_DESCRIPTION.format(root=self.workspace.root),
            annotations=ToolAnnotations(
                title="Write file", edit=True, destructive=True, idempotent=True
            ),
            tags=("edit",),
            metadata=path_metadata("file_path"),
        )

    def _write(
        self,
        file_path: Annotated[
            str, Field(description="The file to write: relative to the workspace root.")
        ],
        content: Annotated[str, Field(description="The file's complete new content.")],
    ) -> ToolReturn:
        shown = f'"{file_path}"'
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            return fail(f"content cannot be written as UTF-8 ({exc.reason}); nothing was written.")
        opened = open_for_replace(self.workspace, file_path, os.O_WRONLY, create=True)
        if isinstance(opened, ToolReturn):
            return opened
        dir_fd, name, fd, st = opened
        try:
            if fd is not None:
                os.close(fd)
            failed = replace_file(dir_fd, name, data, st, file_path)
        finally:
            os.close(dir_fd)
        if failed is not None:
            return failed
        lines = line_count(content)
        was = f" (it had {st.st_size:,} bytes before)" if st is not None and st.st_size else ""
        return ToolReturn(content=f"Wrote {len(data):,} bytes ({lines:,} lines) to {shown}{was}.")


# --- Edit -------------------------------------------------------------------------------------

_EDIT_DESCRIPTION = """\
Replace exact text in a file in the workspace ({root}).

- old_string must match the file exactly, including whitespace and indentation. When you
  copy from Read's output, leave out the line number and the tab before each line.
- old_string must occur exactly once, unless replace_all is true (then every occurrence is
  replaced). If it occurs more than once, include more surrounding lines to make it unique.
- new_string must differ from old_string. The file must exist (use Write to create one).
- The result shows the changed region with line numbers.
"""

SNIPPET_CONTEXT = 3
"""Lines shown around an edit."""
SNIPPET_MAX_LINES = 30


class Edit(FunctionTool):
    """``Edit(file_path, old_string, new_string, replace_all=False)``: exact text replacement.

    Annotated ``edit`` (tag ``"edit"``, so ``accept_edits`` can allow it), not destructive,
    not idempotent; permission metadata argument ``file_path``, kind ``path``. It asks before
    editing (``requires_approval``) unless told not to.

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
        requires_approval: ask before each edit (the approval gate, or the permission
            engine's rules and mode); ``False`` lets every edit run.
    """

    def __init__(
        self, workspace: Workspace | str | os.PathLike[str], *, requires_approval: bool = True
    ) -> None:
        self.workspace = as_workspace(workspace)
        super().__init__(
            self._edit,
            requires_approval=requires_approval,
            name="Edit",
            description=_EDIT_DESCRIPTION.format(root=self.workspace.root),
            annotations=ToolAnnotations(
                title="Edit file", edit=True, destructive=False, idempotent=False
            ),
            tags=("edit",),
            metadata=path_metadata("file_path"),
        )

    def _edit(
        self,
        file_path: Annotated[
            str, Field(description="The file to change: relative to the workspace root.")
        ],
        old_string: Annotated[str, Field(description="The exact text to replace.")],
        new_string: Annotated[str, Field(description="The text to put in its place.")],
        replace_all: Annotated[
            bool, Field(description="Replace every occurrence instead of exactly one.")
        ] = False,
    ) -> ToolReturn:
        shown = f'"{file_path}"'
        if old_string == "":
            return fail("old_string is empty; give the text to replace (use Write for new files).")
        if old_string == new_string:
            return fail("old_string and new_string are the same; there is nothing to change.")
        opened = open_for_replace(self.workspace, file_path, os.O_RDWR, create=False)
        if isinstance(opened, ToolReturn):
            return opened
        dir_fd, name, fd, st = opened
        try:
            if fd is None or st is None:  # not with create=False; kept for the type checker
                return fail(f"{shown} does not exist; use Write to create it.")
            with os.fdopen(fd, "rb") as f:
                changed = _edited(f, st, shown, old_string, new_string, replace_all)
            if isinstance(changed, ToolReturn):
                return changed
            updated, encoded, count, first, new = changed
            failed = replace_file(dir_fd, name, encoded, st, file_path)
        finally:
            os.close(dir_fd)
        if failed is not None:
            return failed
        what = f"{count} occurrences" if count > 1 else "1 occurrence"
        snippet = _snippet(updated, first, len(new))
        return ToolReturn(content=f"Edited {shown}: replaced {what}.\n{snippet}")


def _edited(
    f: BinaryIO, st: os.stat_result, shown: str, old: str, new: str, replace_all: bool
) -> ToolReturn | tuple[str, bytes, int, int, str]:
    """``(new text, its bytes, occurrences, offset of the first, replacement)``, or an error."""
    if st.st_size > MAX_EDIT_BYTES:
        return fail(
            f"{shown} is {st.st_size:,} bytes; Edit changes files of up to "
            f"{MAX_EDIT_BYTES:,} bytes."
        )
    raw = f.read(MAX_EDIT_BYTES + 1)
    if is_binary(raw[:SNIFF_BYTES]):
        return fail(f"{shown} is a binary file; Edit changes text files only.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return fail(f"{shown} is not UTF-8 text ({exc.reason}); Edit cannot change it.")
    planned = _plan(text, old, new, replace_all, shown)
    if isinstance(planned, ToolReturn):
        return planned
    updated, count, first, used = planned
    try:
        encoded = updated.encode("utf-8")
    except UnicodeEncodeError as exc:
        return fail(f"new_string is not valid text ({exc.reason}); nothing was changed.")
    return updated, encoded, count, first, used


def _plan(
    text: str, old: str, new: str, replace_all: bool, shown: str
) -> ToolReturn | tuple[str, int, int, str]:
    """``(new text, occurrences, offset of the first, the replacement used)``, or an error."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # the file has CRLF line endings; Read shows lines without the \r
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        return fail(
            f"old_string was not found in {shown}. It must match the file exactly, including "
            "whitespace and indentation; Read the file and copy the text (without line numbers)."
        )
    if count > 1 and not replace_all:
        return fail(
            f"old_string occurs {count} times in {shown}. Include more surrounding text so it "
            "occurs once, or set replace_all=true to replace every occurrence."
        )
    first = text.index(old)
    return text.replace(old, new), count, first, new


def _snippet(text: str, start: int, length: int) -> str:
    """The lines around ``text[start:start + length]``, numbered ``cat -n`` style."""
    lines = text.splitlines()
    first_line = text.count("\n", 0, start)
    last_line = first_line + text.count("\n", start, start + length)
    lo = max(0, first_line - SNIPPET_CONTEXT)
    hi = min(len(lines), last_line + SNIPPET_CONTEXT + 1, lo + SNIPPET_MAX_LINES)
    shown = [numbered(i + 1, lines[i][:MAX_LINE_CHARS]) for i in range(lo, hi)]
    if not shown:
        return "(the file is now empty)"
    return "\n".join(shown)
