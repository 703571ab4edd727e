"""The walk below a workspace directory (glob patterns are ``dive.globs``).

:func:`walk` starts from a directory descriptor (one :meth:`Workspace.open_relative` gave)
and holds one descriptor per level: each subdirectory is opened relative to its parent with
``O_DIRECTORY | O_NOFOLLOW``, and files are yielded with the descriptor of their directory, to
be opened relative to it with ``O_NOFOLLOW``. Symbolic links are never followed, so a link out
of the root, or one swapped in while the walk runs, is skipped, not entered. Only regular files
are yielded; ``.git``, ``.hg`` and ``.svn`` are skipped; the walk stops after
``MAX_WALK_FILES`` files and says so.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "DIR_FLAGS",
    "FILE_FLAGS",
    "Found",
    "Scan",
    "join",
    "read_found",
    "read_limited",
    "walk",
    "walk_notes",
]

SKIP_DIRS = frozenset({".git", ".hg", ".svn"})
MAX_WALK_FILES = 100_000
"""A walk stops (and the result says it is incomplete) after this many files."""
MAX_DEPTH = 128

DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
FILE_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
)


# --- the walk ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Scan:
    """What a walk counted (files seen, directories it could not read, whether it stopped)."""

    files: int = 0
    unreadable: int = 0
    incomplete: bool = False


@dataclass(frozen=True, slots=True)
class Found:
    rel: str
    name: str
    dir_fd: int  # valid while the walk is at this file
    st: os.stat_result


def walk(
    fd: int, rel: str, scan: Scan, max_depth: int | None = None, depth: int = 0
) -> Iterator[Found]:
    """Regular files under directory ``fd``, never following symbolic links."""
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        scan.unreadable += 1
        return
    subdirs: list[str] = []
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if entry.name not in SKIP_DIRS:
                subdirs.append(entry.name)
        elif stat.S_ISREG(st.st_mode):
            if scan.files >= MAX_WALK_FILES:
                scan.incomplete = True
                return
            scan.files += 1
            yield Found(rel=join(rel, entry.name), name=entry.name, dir_fd=fd, st=st)
    if depth >= MAX_DEPTH or (max_depth is not None and depth >= max_depth):
        return
    for name in subdirs:
        try:
            sub = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:  # vanished, or swapped for a link: not entered
            scan.unreadable += 1
            continue
        try:
            yield from walk(sub, join(rel, name), scan, max_depth, depth + 1)
        finally:
            os.close(sub)
        if scan.incomplete:
            return


def read_limited(fd: int, cap: int) -> bytes | None:
    """The rest of ``fd``'s bytes, or None once they pass ``cap`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def read_found(item: Found, cap: int) -> bytes | None:
    """A walked file's bytes (None: unreadable, not regular or over ``cap`` bytes).

    It is opened relative to its directory's descriptor without following links.
    """
    try:
        fd = os.open(item.name, FILE_FLAGS, dir_fd=item.dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_limited(fd, cap)
    except OSError:
        return None
    finally:
        os.close(fd)


def join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel and rel != "." else name


def walk_notes(scan: Scan) -> list[str]:
    notes: list[str] = []
    if scan.incomplete:
        notes.append(
            f"[Search incomplete: it stopped after {MAX_WALK_FILES:,} files. Narrow the "
            "path or pattern.]"
        )
    if scan.unreadable:
        notes.append(f"[{scan.unreadable} directories could not be read and were skipped.]")
    return notes
