"""What a directory search reaches: ``Grep`` and ``Glob`` read a whole tree.

A path rule is about one path, but ``Grep(pattern, path=".")`` reads every file under the
root and ``Glob(pattern="**/*")`` lists them. So for the toolkit's two tree searches (by
name, as their contract fixes it: ``Grep`` with its ``path`` argument, ``Glob`` with its
``pattern``) the engine works out the directory searched and, as glob segments below it,
the paths the search can touch:

- ``Grep``: everything below ``path`` (default ``.``), or what its ``glob`` filter admits (a
  glob without ``/`` matches file names at any depth; one with ``/`` the path below
  ``path``; an exclusion ``!...`` is taken as everything);
- ``Glob``: the directory part of ``join(path or ".", pattern)`` (of ``pattern`` alone when
  it is absolute, as the tool reads it), and the rest of the pattern below it.

A deny or ask rule *reaches into* a search when some path its pattern matches could be one
of those paths: :func:`reaches`. Globs on both sides are compared segment by segment
(``**`` standing for any number of segments); where both segments are patterns they are
taken to overlap. The toolkit never follows symbolic links below the directory it searches,
so links inside it are not looked at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from dive.permissions._paths import ResolvedPath, pattern_parts, segment_matches

__all__ = ["SEARCH_TOOLS", "Search", "reaches", "search_of"]

SEARCH_TOOLS = frozenset({"Grep", "Glob"})
_TOOLKIT_GLOB = "*?[{"
_RULE_GLOB = "*?["


@dataclass(frozen=True, slots=True, kw_only=True)
class Search:
    """A tree search, as the tool will run it.

    Attributes:
        directory: the directory searched (as the call names it).
        path: ``Glob``'s ``path`` argument when the pattern has a directory part of its own
            (deny and ask rules look at it too), else None.
        below: glob segments of the paths it reads, relative to ``directory``.
    """

    directory: str
    path: str | None
    below: tuple[str, ...]


def _split_literal(pattern: str) -> tuple[str, str]:
    """``(directory part without glob characters, the rest)``, as the toolkit's Glob splits."""
    segments = pattern.split("/")
    literal: list[str] = []
    for seg in segments[:-1]:
        if any(ch in seg for ch in _TOOLKIT_GLOB):
            break
        literal.append(seg)
    return "/".join(literal), "/".join(segments[len(literal) :])


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel and rel != "." else name


def _grep_below(glob: object) -> tuple[str, ...]:
    if not isinstance(glob, str) or not glob or glob.startswith("!"):
        return ("**",)
    if "/" in glob:
        return tuple(s for s in glob.split("/") if s)
    return ("**", glob)


def search_of(tool: str, argument: str, arguments: Mapping[str, Any]) -> Search | None:
    """The search a ``Grep`` or ``Glob`` call runs (None: another tool, or no pattern).

    Args:
        tool: the tool name.
        argument: the tool's permission argument (``path`` for Grep, ``pattern`` for Glob).
        arguments: the call's arguments.
    """
    if tool == "Grep" and argument == "path":
        path = arguments.get("path")
        directory = path if isinstance(path, str) else "."
        return Search(directory=directory, path=None, below=_grep_below(arguments.get("glob")))
    if tool != "Glob" or argument != "pattern":
        return None
    pattern = arguments.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return None
    given = arguments.get("path")
    base = given if isinstance(given, str) else "."
    prefix, rest = _split_literal(pattern)
    if os.path.isabs(pattern):
        return Search(directory=prefix or "/", path=None, below=_segments(rest))
    directory = _join(base, prefix) if prefix else base
    return Search(
        directory=directory,
        path=base if prefix and isinstance(given, str) else None,
        below=_segments(rest),
    )


def _segments(glob: str) -> tuple[str, ...]:
    return tuple(s for s in glob.split("/") if s) or ("**",)


@lru_cache(maxsize=1024)
def _toolkit_segment(segment: str) -> re.Pattern[str]:
    """One segment of a toolkit glob (``*``, ``?``, ``[...]``, ``{a,b}``) as a regex."""
    out: list[str] = []
    depth, i = 0, 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := segment.find("]", i + 2)) > 0:
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "," and depth:
            out.append("|")
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + ")" * depth)
    except re.error:
        return re.compile(".*")  # unreadable: assume it matches


def _meet(rule: str, search: str) -> bool:
    """Whether a rule segment and a search segment can match one name."""
    rule_literal = not any(c in rule for c in _RULE_GLOB)
    search_literal = not any(c in search for c in _TOOLKIT_GLOB)
    if rule_literal and search_literal:
        return rule == search
    if rule_literal:
        return _toolkit_segment(search).fullmatch(rule) is not None
    if search_literal:
        return segment_matches(rule, search)
    return True


def _overlap(rule: tuple[str, ...], search: tuple[str, ...]) -> bool:
    """Whether some path matches both segment globs (``**``: any number of segments)."""

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(rule) and j == len(search):
            return True
        if i < len(rule) and rule[i] == "**":
            return go(i + 1, j) or (j < len(search) and go(i, j + 1))
        if j < len(search) and search[j] == "**":
            return go(i, j + 1) or (i < len(rule) and go(i + 1, j))
        if i == len(rule) or j == len(search):
            return False
        return _meet(rule[i], search[j]) and go(i + 1, j + 1)

    return go(0, 0)


def _under(path: str, directory: str) -> tuple[str, ...] | None:
    """The segments of ``path`` below ``directory`` (empty: the same), or None."""
    if path == directory:
        return ()
    prefix = directory.rstrip("/") + "/"
    if not path.startswith(prefix):
        return None
    return tuple(s for s in path[len(prefix) :].split("/") if s)


def reaches(spec: str, root: str, directory: ResolvedPath, below: tuple[str, ...]) -> bool:
    """Whether a search of ``directory`` reading ``below`` can touch a path ``spec`` matches.

    Args:
        spec: a path specifier (``./secrets/**``, ``.env``).
        root: the workspace root.
        directory: the directory searched, resolved.
        below: the glob segments of the paths read, relative to ``directory``.
    """
    bases, rest = pattern_parts(spec, root)
    for searched in {directory.lexical, directory.real}:
        for base in bases:
            inside = _under(base, searched)
            if inside is not None and _overlap(inside + rest, below):
                return True
            around = _under(searched, base)
            if around and _overlap(rest, around + below):
                return True
    return False
