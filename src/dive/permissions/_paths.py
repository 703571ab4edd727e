"""Path specifiers: segment-safe path globs and symlink-aware path views.

**Paths.** A rule's path pattern is anchored like this: ``./x`` and ``x/y`` (anything with a
slash) are relative to the workspace root; ``x`` without a slash (``*.py``, ``.env``) matches
that name at any depth under the root; ``/x`` and ``//x`` are absolute; ``~/x`` is under the
home directory; a trailing ``/`` means the directory and everything in it. In a pattern,
``*`` and ``?`` never cross a ``/``; ``**`` as a whole segment matches zero or more segments
(so ``./src/**`` covers ``src`` itself too); ``[abc]`` is a character class.

A call's path is resolved against the workspace root and normalized (``a/../b`` is ``b``).
It is looked at two ways: as written (lexically) and as the file system resolves it
(symlinks followed). An allow rule must match both, and never matches a path with a ``..``
segment; a deny or ask rule matches if either view does.

**Globs.** :func:`glob_regex` is the plain glob of command, text and URL specifiers: ``*``
matches any characters.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "ResolvedPath",
    "glob_regex",
    "path_matches",
    "pattern_parts",
    "resolve_path",
    "segment_matches",
]

_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedPath:
    """A call's path, resolved against the workspace root.

    Attributes:
        lexical: absolute and normalized, symlinks not followed.
        real: absolute with symlinks followed.
        climbs: the path as written has a ``..`` segment.
    """

    lexical: str
    real: str
    climbs: bool


def resolve_path(value: str, root: str) -> ResolvedPath:
    """Resolve a call's path argument against the workspace ``root`` (absolute)."""
    expanded = os.path.expanduser(value)
    joined = expanded if os.path.isabs(expanded) else os.path.join(root, expanded)
    parts = re.split(r"[/\\]", value)
    return ResolvedPath(
        lexical=os.path.normpath(joined),
        real=os.path.realpath(joined),
        climbs=".." in parts,
    )


def _anchor(spec: str, root: str) -> str:
    """The absolute glob a path specifier stands for."""
    if spec.startswith("//"):
        spec = spec[1:]
    elif spec.startswith("~/") or spec == "~":
        spec = os.path.expanduser("~") + spec[1:]
    elif spec.startswith("./") or spec == ".":
        spec = root + spec[1:]
    elif not spec.startswith("/"):
        spec = f"{root}/{spec}" if "/" in spec.rstrip("/") else f"{root}/**/{spec}"
    if spec.endswith("/"):
        spec += "**"
    return spec


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := segment.find("]", i + 2)) > 0:
            body = segment[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\").replace("/", "") + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _rest_regex(segments: list[str]) -> str:
    out: list[str] = []
    for seg in segments:
        if seg == "**":
            out.append("(?:/[^/]+)*")
        elif seg:
            out.append("/" + _segment_regex(seg))
    return "".join(out)


@lru_cache(maxsize=1024)
def pattern_parts(spec: str, root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A path specifier's literal base (as written and as resolved) and its glob segments.

    Args:
        spec: the specifier, such as ``./secrets/**``.
        root: the workspace root it is anchored to.
    """
    segments = [s for s in os.path.normpath(_anchor(spec, root)).split("/") if s]
    n = 0
    while n < len(segments) and not _GLOB_CHARS & set(segments[n]):
        n += 1
    base = "/" + "/".join(segments[:n])
    bases = {os.path.normpath(base), os.path.realpath(base)}
    return tuple(sorted(bases)), tuple(segments[n:])


def segment_matches(pattern: str, name: str) -> bool:
    """Whether one path segment ``name`` matches one segment of a specifier."""
    return re.fullmatch(_segment_regex(pattern), name) is not None


@lru_cache(maxsize=1024)
def _path_regexes(spec: str, root: str) -> tuple[re.Pattern[str], ...]:
    """The regexes of a path specifier: one on its literal base, one on its real base."""
    bases, segments = pattern_parts(spec, root)
    rest = _rest_regex(list(segments))
    return tuple(
        re.compile(re.escape("" if b == "/" else b) + rest + ("" if rest or b != "/" else "/"))
        for b in bases
    )


def path_matches(spec: str, path: ResolvedPath, root: str, *, allow: bool) -> bool:
    """Whether a path specifier matches a resolved path (all views for allow, any for deny)."""
    regexes = _path_regexes(spec, root)

    def one(p: str) -> bool:
        return any(r.fullmatch(p) for r in regexes)

    if allow:
        return not path.climbs and one(path.lexical) and one(path.real)
    return one(path.lexical) or one(path.real)


@lru_cache(maxsize=1024)
def glob_regex(spec: str) -> re.Pattern[str]:
    """A glob where ``*`` matches any characters; a trailing `` *`` also matches nothing."""
    tail = ""
    if spec.endswith(" *"):
        spec, tail = spec[:-2], "(?: .*)?"
    body = ".*".join(re.escape(part) for part in spec.split("*"))
    return re.compile(body + tail, re.DOTALL)
