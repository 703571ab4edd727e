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

The search's glob is read by ``dive.globs``, the very implementation the toolkit matches
with (its ``{a,b}`` alternatives expanded, an unclosed ``{`` literal), so the engine never
reads a pattern differently from the tool. A deny or ask rule *reaches into* a search when
some path its pattern matches could be one of those paths: :func:`reaches`. Globs on both
sides are compared segment by segment (``**`` standing for any number of segments); where
both segments are patterns they are taken to overlap. The toolkit never follows symbolic
links below the directory it searches, so links inside it are not looked at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from dive.globs import GlobError, GlobPart, glob_alternatives, split_literal
from dive.permissions._paths import ResolvedPath, pattern_parts, segment_matches

__all__ = ["SEARCH_TOOLS", "Reach", "Search", "reaches", "search_of"]

SEARCH_TOOLS = frozenset({"Grep", "Glob"})
_RULE_GLOB = "*?["

Reach = tuple[tuple[GlobPart, ...], ...]
"""What a search reads below its directory: alternatives, each a tuple of path segments."""

_GLOBSTAR = glob_alternatives("**")[0][0]
_EVERYTHING: Reach = ((_GLOBSTAR,),)


@dataclass(frozen=True, slots=True, kw_only=True)
class Search:
    """A tree search, as the tool will run it.

    Attributes:
        directory: the directory searched (as the call names it).
        path: ``Glob``'s ``path`` argument when the pattern has a directory part of its own
            (deny and ask rules look at it too), else None.
        below: what it reads, relative to ``directory``.
    """

    directory: str
    path: str | None
    below: Reach


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel and rel != "." else name


def _below(glob: str) -> Reach:
    """A glob's alternatives without empty segments (all of them empty: everything)."""
    try:
        alternatives = glob_alternatives(glob)
    except GlobError:
        return _EVERYTHING  # the toolkit refuses such a pattern; assume it reads everything
    out = tuple(tuple(p for p in alt if p.text) for alt in alternatives)
    return tuple(alt or (_GLOBSTAR,) for alt in out) or _EVERYTHING


def _grep_below(glob: object) -> Reach:
    if not isinstance(glob, str) or not glob or glob.startswith("!"):
        return _EVERYTHING
    if "/" in glob:
        return _below(glob)
    return tuple((_GLOBSTAR, *alt) for alt in _below(glob))


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
    prefix, rest = split_literal(pattern)
    if os.path.isabs(pattern):
        return Search(directory=prefix or "/", path=None, below=_below(rest))
    directory = _join(base, prefix) if prefix else base
    return Search(
        directory=directory,
        path=base if prefix and isinstance(given, str) else None,
        below=_below(rest),
    )


def _literal(name: str) -> GlobPart:
    return GlobPart(text=name, regex=re.compile(re.escape(name)), literal=True, globstar=False)


def _meet(rule: str, search: GlobPart) -> bool:
    """Whether a rule segment and a search segment can match one name."""
    rule_literal = not any(c in rule for c in _RULE_GLOB)
    if rule_literal and search.literal:
        return rule == search.text
    if rule_literal:
        return search.regex.fullmatch(rule) is not None
    if search.literal:
        return segment_matches(rule, search.text)
    return True


def _overlap(rule: tuple[str, ...], search: tuple[GlobPart, ...]) -> bool:
    """Whether some path matches both segment globs (``**``: any number of segments)."""

    @cache
    def go(i: int, j: int) -> bool:
        if i == len(rule) and j == len(search):
            return True
        if i < len(rule) and rule[i] == "**":
            return go(i + 1, j) or (j < len(search) and go(i, j + 1))
        if j < len(search) and search[j].globstar:
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


def reaches(spec: str, root: str, directory: ResolvedPath, below: Reach) -> bool:
    """Whether a search of ``directory`` reading ``below`` can touch a path ``spec`` matches.

    Args:
        spec: a path specifier (``./secrets/**``, ``.env``).
        root: the workspace root.
        directory: the directory searched, resolved.
        below: what the search reads, relative to ``directory`` (its alternatives).
    """
    bases, rest = pattern_parts(spec, root)
    for searched in {directory.lexical, directory.real}:
        for base in bases:
            inside = _under(base, searched)
            around = _under(searched, base)
            for alt in below:
                if inside is not None and _overlap(inside + rest, alt):
                    return True
                if around and _overlap(rest, tuple(_literal(a) for a in around) + alt):
                    return True
    return False
