"""``Glob``, ``Grep`` and ``ListDirectory``: finding things in a :class:`Workspace`.

The directory searched is opened through :meth:`Workspace.open_relative` (checked, then opened
without following links). Below it, the walk holds a descriptor per level and opens each
subdirectory and file relative to it with ``O_NOFOLLOW``: symbolic links are never followed
(as ripgrep does by default), so a link to a directory outside the root, or one swapped in
during the walk, is skipped rather than entered. ``.git``, ``.hg`` and ``.svn`` directories
are skipped. Every result is bounded, and a cut result says so and how to see more.

All three are annotated read-only and idempotent. Permission metadata: ``Glob`` argument
``pattern``, ``Grep`` and ``ListDirectory`` argument ``path``; kind ``path``.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field

from dive.errors import UserError
from dive.globs import GlobError, glob_regex, split_literal
from dive.toolkit._files import SNIFF_BYTES, as_workspace, fail, is_binary, path_metadata
from dive.toolkit._walk import (
    DIR_FLAGS,
    Scan,
    join,
    read_found,
    read_limited,
    walk,
    walk_notes,
)
from dive.toolkit._workspace import PathOutsideWorkspaceError, Workspace, WorkspaceError
from dive.tools import FunctionTool, ToolAnnotations, ToolReturn

__all__ = ["Glob", "Grep", "ListDirectory"]

GLOB_LIMIT = 100
"""Paths ``Glob`` returns at most (the newest)."""
GREP_HEAD_LIMIT = 250
"""Entries ``Grep`` returns when no ``head_limit`` is given."""
MAX_GREP_CHARS = 30_000
"""``Grep`` output stops at an entry boundary once it reaches this many characters."""
MAX_GREP_LINE_CHARS = 500
MAX_GREP_FILE_BYTES = 10 * 1024 * 1024
"""Larger files are not searched (the result counts them)."""
LIST_LIMIT = 1000
"""Entries ``ListDirectory`` shows at most."""
GREP_TIME_BUDGET = 20.0
"""Seconds a ``Grep`` call searches before it stops with what it found (the default)."""


# --- Glob -------------------------------------------------------------------------------------

_GLOB_DESCRIPTION = """\
Find files by name pattern in the workspace ({root}); the newest (by modification time) first.

- pattern is matched against paths relative to path (default: the workspace root).
  * and ? match within one directory level, ** matches any number of levels, [abc] a
  character class and {{a,b}} alternatives. "*.py" finds Python files directly in path;
  "**/*.py" finds them at any depth; "src/**/*.{{ts,tsx}}" under src.
- Results are paths relative to the workspace root (ready for Read), at most {limit}; the
  result says when it was truncated or the search was incomplete.
- Symbolic links are not followed; .git, .hg and .svn directories are skipped.
"""


class Glob(FunctionTool):
    """``Glob(pattern, path=None)``: files whose path matches a glob, newest first.

    Annotated read-only and idempotent; permission metadata argument ``pattern``, kind
    ``path``.

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
    """

    def __init__(self, workspace: Workspace | str | os.PathLike[str]) -> None:
        self.workspace = as_workspace(workspace)
        super().__init__(
            self._glob,
            name="Glob",
            description=_GLOB_DESCRIPTION.format(root=self.workspace.root, limit=GLOB_LIMIT),
            annotations=ToolAnnotations(title="Find files", read_only=True, idempotent=True),
            metadata=path_metadata("pattern"),
        )

    def _glob(
        self,
        pattern: Annotated[
            str, Field(min_length=1, description='The glob pattern, e.g. "**/*.py".')
        ],
        path: Annotated[
            str | None,
            Field(description="The directory to search in (default: the workspace root)."),
        ] = None,
    ) -> ToolReturn:
        ws = self.workspace
        base = path if path is not None else "."
        if os.path.isabs(pattern):
            prefix, rest = split_literal(pattern)
            base, pattern = prefix or "/", rest
        if ".." in pattern.split("/"):
            return fail(
                f'The pattern "{pattern}" contains "..". Patterns match below the search '
                "directory; pass the directory to search as path instead."
            )
        prefix, rest = split_literal(pattern)
        try:
            regex = glob_regex(pattern)
        except GlobError as exc:
            return fail(f'The pattern "{pattern}" cannot be used: {exc}.')
        max_depth = None if "**" in rest else rest.count("/")
        try:  # the literal directory part of the pattern goes through the same check
            fd, start_rel = ws.open_relative(join(base, prefix) if prefix else base, DIR_FLAGS)
        except PathOutsideWorkspaceError as exc:
            return fail(str(exc))
        except WorkspaceError as exc:
            if not prefix:
                return fail(str(exc))
            return _no_prefix(ws, base, pattern)
        scan = Scan()
        found: list[tuple[float, str]] = []
        try:
            for item in walk(fd, "", scan, max_depth):
                if regex.match(join(prefix, item.rel)):
                    found.append((item.st.st_mtime, join(start_rel, item.rel)))
        finally:
            os.close(fd)
        found.sort(key=lambda f: (-f[0], f[1]))
        lines = [p for _, p in found[:GLOB_LIMIT]]
        if not lines:
            lines.append(f'No files match "{pattern}" in "{base}".')
        if len(found) > GLOB_LIMIT:
            lines.append(
                f"[Results truncated: {len(found):,} files match; these are the {GLOB_LIMIT} "
                "newest. Use a narrower pattern or path.]"
            )
        lines.extend(walk_notes(scan))
        return ToolReturn(content="\n".join(lines))


def _no_prefix(ws: Workspace, base: str, pattern: str) -> ToolReturn:
    """The pattern's directory part is missing: no match, if the search directory exists."""
    try:
        fd, _ = ws.open_relative(base, DIR_FLAGS)
    except WorkspaceError as exc:
        return fail(str(exc))
    os.close(fd)
    return ToolReturn(content=f'No files match "{pattern}" in "{base}".')


# --- Grep -------------------------------------------------------------------------------------

_GREP_DESCRIPTION = """\
Search file contents with a regular expression in the workspace ({root}), like ripgrep.

- pattern uses Python regular expressions (close to ripgrep's syntax): "def \\w+", "TODO|FIXME".
  Escape literal characters such as ( [ {{ . with a backslash.
- path: a file or directory (default: the workspace root). glob filters files: "*.py" or
  "*.{{ts,tsx}}" match file names anywhere; a glob with "/" ("src/**/*.py") matches paths
  relative to path; a leading "!" excludes ("!*.min.js").
- output_mode: "files_with_matches" (default; paths, newest first), "content" (matching
  lines as path:line:text; context lines as path-line-text, groups separated by --), or
  "count" (path:number of matching lines).
- before / after / context: lines of context around each match (content mode only).
- ignore_case: case-insensitive. multiline: the pattern may span lines and . matches newlines.
- Results are paged: head_limit entries (default {head_limit}) after skipping offset entries.
  When more exist the result says which offset gives the next page.
- Binary files, files over {max_mb} MB, .git/.hg/.svn and symbolic links are skipped.
- A search stops after {budget:g} s with the results so far and a note; prefer simple
  patterns (nested repeats such as (a+)+ can take exponential time).
"""

_NEWLINE = re.compile("\n")

OutputMode = Literal["content", "files_with_matches", "count"]


@dataclass(frozen=True, slots=True)
class _GrepQuery:
    regex: re.Pattern[str]
    multiline: bool
    mode: OutputMode
    before: int
    after: int
    want: int | None  # stop once this many entries are found (None: find all)
    deadline: float  # time.monotonic() past which the search stops


class _OutOfTime(Exception):
    """The search used up its time budget."""


def _check_time(query: _GrepQuery) -> None:
    if time.monotonic() > query.deadline:
        raise _OutOfTime


@dataclass(slots=True)
class _Outcome:
    entries: list[str] = field(default_factory=list[str])
    scan: Scan = field(default_factory=Scan)
    too_big: int = 0
    stopped_in: str | None = None  # the file being searched when the budget ran out


class Grep(FunctionTool):
    """``Grep(pattern, path=None, glob=None, output_mode=..., ...)``: a bounded, paged search.

    Annotated read-only and idempotent; permission metadata argument ``path``, kind ``path``.

    A search is bounded in time as well as in output: the clock is checked between files
    and between lines (between matches in multiline mode), and once ``time_budget`` seconds
    have passed the search stops and returns what it found with a note that names the file
    it was in. One regular-expression search of a single line (or, in multiline mode, of a
    whole file) cannot be interrupted: Python's ``re`` holds the thread until it returns, so a
    pathological pattern on one long line can still run past the budget (and past the
    loop's tool timeout, which stops waiting for it but cannot stop the worker thread).

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
        time_budget: seconds a call may search before it stops with partial results.

    Raises:
        UserError: ``time_budget`` is not positive.
    """

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str],
        *,
        time_budget: float = GREP_TIME_BUDGET,
    ) -> None:
        if not time_budget > 0:
            raise UserError(f"Grep: time_budget must be > 0 seconds, not {time_budget!r}")
        self.workspace = as_workspace(workspace)
        self.time_budget = float(time_budget)
        super().__init__(
            self._grep,
            name="Grep",
            description=_GREP_DESCRIPTION.format(
                root=self.workspace.root,
                head_limit=GREP_HEAD_LIMIT,
                max_mb=MAX_GREP_FILE_BYTES // (1024 * 1024),
                budget=self.time_budget,
            ),
            annotations=ToolAnnotations(title="Search files", read_only=True, idempotent=True),
            metadata=path_metadata("path"),
        )

    def _grep(
        self,
        pattern: Annotated[str, Field(min_length=1, description="The regular expression.")],
        path: Annotated[
            str | None, Field(description="A file or directory (default: the workspace root).")
        ] = None,
        glob: Annotated[
            str | None, Field(description='Only search files matching this glob, e.g. "*.py".')
        ] = None,
        output_mode: Annotated[
            OutputMode, Field(description="content, files_with_matches (default) or count.")
        ] = "files_with_matches",
        before: Annotated[
            int | None, Field(ge=0, description="Context lines before each match (content).")
        ] = None,
        after: Annotated[
            int | None, Field(ge=0, description="Context lines after each match (content).")
        ] = None,
        context: Annotated[
            int | None, Field(ge=0, description="Context lines before and after (content).")
        ] = None,
        ignore_case: Annotated[bool, Field(description="Match case-insensitively.")] = False,
        multiline: Annotated[
            bool, Field(description="Let the pattern span lines; . matches newlines.")
        ] = False,
        head_limit: Annotated[
            int | None, Field(ge=1, description=f"Entries to return (default {GREP_HEAD_LIMIT}).")
        ] = None,
        offset: Annotated[int, Field(ge=0, description="Entries to skip first (paging).")] = 0,
    ) -> ToolReturn:
        flags = (re.IGNORECASE if ignore_case else 0) | (
            re.MULTILINE | re.DOTALL if multiline else 0
        )
        try:
            regex = re.compile(pattern, flags)
        except re.error as exc:
            return fail(
                f"Invalid regular expression {pattern!r}: {exc}. Grep uses Python re syntax; "
                "escape literal characters such as ( [ { with a backslash."
            )
        limit = head_limit or GREP_HEAD_LIMIT
        query = _GrepQuery(
            regex=regex,
            multiline=multiline,
            mode=output_mode,
            before=before if before is not None else (context or 0),
            after=after if after is not None else (context or 0),
            want=None if output_mode == "files_with_matches" else offset + limit + 1,
            deadline=time.monotonic() + self.time_budget,
        )
        try:
            filt = _file_filter(glob)
        except GlobError as exc:
            return fail(f'The glob "{glob}" cannot be used: {exc}.')
        try:
            fd, rel = self.workspace.open_relative(path if path is not None else ".")
        except WorkspaceError as exc:
            return fail(str(exc))
        try:
            outcome = _search(fd, rel, query, filt)
        finally:
            os.close(fd)
        if isinstance(outcome, ToolReturn):
            return outcome
        return ToolReturn(content=_page(outcome, offset, limit, self.time_budget))


def _file_filter(glob: str | None) -> tuple[re.Pattern[str], bool, bool] | None:
    """``(regex, match the whole relative path, exclude)`` for a ``glob`` filter."""
    if not glob:
        return None
    exclude = glob.startswith("!")
    body = glob[1:] if exclude else glob
    return glob_regex(body), "/" in body, exclude


def _search(
    fd: int, rel: str, query: _GrepQuery, filt: tuple[re.Pattern[str], bool, bool] | None
) -> ToolReturn | _Outcome:
    st = os.fstat(fd)
    found = _Outcome()
    if not stat.S_ISDIR(st.st_mode):
        if not stat.S_ISREG(st.st_mode):
            return fail(f'"{rel}" is not a regular file or directory; Grep cannot search it.')
        data = read_limited(fd, MAX_GREP_FILE_BYTES)
        if data is None:
            return fail(f'"{rel}" is over {MAX_GREP_FILE_BYTES:,} bytes; Grep skips such files.')
        if is_binary(data[:SNIFF_BYTES]):
            return fail(f'"{rel}" is a binary file; Grep searches text files only.')
        try:
            _entries_of(rel, data, query, found.entries)
        except _OutOfTime:
            found.entries.clear()  # the file was searched part way
            found.stopped_in = rel
        return found
    dated: list[tuple[float, str]] = []
    try:
        _walk_files(fd, rel, query, filt, found, dated)
    except _OutOfTime:
        pass
    if query.mode == "files_with_matches":
        dated.sort(key=lambda d: (-d[0], d[1]))
        found.entries = [p for _, p in dated]
    return found


def _walk_files(
    fd: int,
    rel: str,
    query: _GrepQuery,
    filt: tuple[re.Pattern[str], bool, bool] | None,
    found: _Outcome,
    dated: list[tuple[float, str]],
) -> None:
    """Search every file below ``fd`` into ``found`` (or ``dated``); raises :class:`_OutOfTime`."""
    for item in walk(fd, "", found.scan):
        if time.monotonic() > query.deadline:
            found.stopped_in = join(rel, item.rel)
            raise _OutOfTime
        if filt is not None:
            regex, whole, exclude = filt
            if bool(regex.match(item.rel if whole else item.name)) == exclude:
                continue
        if item.st.st_size > MAX_GREP_FILE_BYTES:
            found.too_big += 1
            continue
        data = read_found(item, MAX_GREP_FILE_BYTES)
        if data is None or is_binary(data[:SNIFF_BYTES]):
            continue
        shown = join(rel, item.rel)
        mark = len(found.entries)
        try:
            if query.mode == "files_with_matches":
                if _matches(data, query):
                    dated.append((item.st.st_mtime, shown))
            else:
                _entries_of(shown, data, query, found.entries)
        except _OutOfTime:
            del found.entries[mark:]  # a file searched part way is left out
            found.stopped_in = shown
            raise
        if query.want is not None and len(found.entries) >= query.want:
            return


def _decode_lines(data: bytes) -> tuple[str, list[str]]:
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return text, [line.removesuffix("\r") for line in lines]


def _matches(data: bytes, query: _GrepQuery) -> bool:
    text, lines = _decode_lines(data)
    if query.multiline:
        return query.regex.search(text) is not None
    for line in lines:
        if query.regex.search(line):
            return True
        _check_time(query)
    return False


def _matching_lines(text: str, lines: list[str], query: _GrepQuery) -> list[int]:
    """0-based indexes of the lines holding a match (all lines a multiline match spans).

    Raises:
        _OutOfTime: the time budget ran out (checked after each line, or each match).
    """
    if not query.multiline:
        found: list[int] = []
        for i, line in enumerate(lines):
            if query.regex.search(line):
                found.append(i)
            _check_time(query)
        return found
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
    hit: set[int] = set()
    for m in query.regex.finditer(text):
        _check_time(query)
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.start(), m.end() - 1)) - 1
        hit.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(hit)


def _entries_of(shown: str, data: bytes, query: _GrepQuery, out: list[str]) -> list[str]:
    """Append this file's entries (content lines or its count) to ``out``."""
    text, lines = _decode_lines(data)
    hits = _matching_lines(text, lines, query)
    if not hits:
        return out
    if query.mode == "count":
        out.append(f"{shown}:{len(hits)}")
        return out
    if query.mode == "files_with_matches":
        out.append(shown)
        return out
    hit_set = set(hits)
    windows: list[tuple[int, int]] = []
    for i in hits:
        lo, hi = max(0, i - query.before), min(len(lines) - 1, i + query.after)
        if windows and lo <= windows[-1][1] + 1:
            windows[-1] = (windows[-1][0], max(windows[-1][1], hi))
        else:
            windows.append((lo, hi))
    with_context = query.before or query.after
    for lo, hi in windows:
        if with_context and out:
            out.append("--")
        for i in range(lo, hi + 1):
            sep = ":" if i in hit_set else "-"
            line = lines[i]
            if len(line) > MAX_GREP_LINE_CHARS:
                line = line[:MAX_GREP_LINE_CHARS] + " … [line cut]"
            out.append(f"{shown}{sep}{i + 1}{sep}{line}")
    return out


def _page(found: _Outcome, offset: int, limit: int, budget: float) -> str:
    entries = found.entries
    page: list[str] = []
    size = 0
    for entry in entries[offset : offset + limit]:
        if page and size + len(entry) + 1 > MAX_GREP_CHARS:
            break
        page.append(entry)
        size += len(entry) + 1
    notes: list[str] = []
    if not entries:
        notes.append("No matches found." if found.stopped_in is None else "No matches found yet.")
    elif not page:
        notes.append(f"No results at offset={offset}; there are {len(entries)} entries.")
    end = offset + len(page)
    if page and len(entries) > end:
        notes.append(
            f"[Showing entries {offset + 1}-{end}; more exist. Call Grep again with the same "
            f"arguments and offset={end} for the next page.]"
        )
    if found.stopped_in is not None:
        notes.append(
            f'[Grep stopped after its time budget of {budget:g} s, at "{found.stopped_in}": '
            "the results are incomplete. Search a narrower path or glob, or simplify the "
            "pattern (nested repeats like (a+)+ are very slow).]"
        )
    if found.too_big:
        notes.append(
            f"[{found.too_big} files over {MAX_GREP_FILE_BYTES:,} bytes were not searched.]"
        )
    notes.extend(walk_notes(found.scan))
    return "\n".join(page + notes)


# --- ListDirectory ----------------------------------------------------------------------------

_LIST_DESCRIPTION = """\
List one directory of the workspace ({root}): each entry's type and size.

- path is relative to the workspace root (default "." is the root itself).
- Lines look like "dir   src/", "file  main.py  (1,234 bytes)", "link  data -> ...".
  Directories come first, then other entries, each group by name; at most {limit} entries.
- Not recursive: use Glob with "**" to find files at any depth.
"""


class ListDirectory(FunctionTool):
    """``ListDirectory(path=".")``: a directory's entries with their type and size.

    Annotated read-only and idempotent; permission metadata argument ``path``, kind ``path``.

    Args:
        workspace: the workspace (or its root directory) the tool is confined to.
    """

    def __init__(self, workspace: Workspace | str | os.PathLike[str]) -> None:
        self.workspace = as_workspace(workspace)
        super().__init__(
            self._list,
            name="ListDirectory",
            description=_LIST_DESCRIPTION.format(root=self.workspace.root, limit=LIST_LIMIT),
            annotations=ToolAnnotations(title="List directory", read_only=True, idempotent=True),
            metadata=path_metadata("path"),
        )

    def _list(
        self,
        path: Annotated[
            str, Field(description='The directory, relative to the workspace root ("." = root).')
        ] = ".",
    ) -> ToolReturn:
        ws = self.workspace
        try:
            fd, rel = ws.open_relative(path, DIR_FLAGS)
        except WorkspaceError as exc:
            return fail(str(exc))
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            rows = [_describe(ws, fd, rel, e) for e in entries]
        except OSError as exc:
            return fail(f'Could not list "{rel}": {exc.strerror or exc}.')
        finally:
            os.close(fd)
        rows.sort(key=lambda r: (r[0] != "dir", r[1]))
        lines = [f'Directory "{rel}" ({len(rows)} entries):']
        lines += [text for _, _, text in rows[:LIST_LIMIT]]
        if not rows:
            lines.append("(empty)")
        if len(rows) > LIST_LIMIT:
            lines.append(
                f"[{len(rows) - LIST_LIMIT:,} more entries not shown; use Glob to narrow down.]"
            )
        return ToolReturn(content="\n".join(lines))


def _describe(ws: Workspace, fd: int, rel: str, entry: os.DirEntry[str]) -> tuple[str, str, str]:
    """``(kind, name, line)`` for one entry (links described, never followed)."""
    name = entry.name
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return "other", name, f"?     {name}  (cannot be read)"
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "dir", name, f"dir   {name}/"
    if stat.S_ISREG(mode):
        return "file", name, f"file  {name}  ({st.st_size:,} bytes)"
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(name, dir_fd=fd)
            ws.resolve(join(rel, name))
        except PathOutsideWorkspaceError:
            return "link", name, f"link  {name} -> (outside the workspace; cannot be used)"
        except OSError:
            return "link", name, f"link  {name} -> (unreadable)"
        return "link", name, f"link  {name} -> {target}"
    return "other", name, f"other {name}  (a device, socket or FIFO)"
