"""The glob language of the toolkit's ``Glob`` and ``Grep``, in one place.

The toolkit matches paths with it, and the permission engine reasons with the very same
reading about which paths a search can reach (a deny rule is only as good as that
agreement). A pattern is read once into tokens, then:

- ``{a,b}`` alternatives (nested to any depth) are expanded first, as a shell does; a ``{``
  without its matching ``}`` is a literal character, and so are ``,`` and ``}`` outside a
  group. ``{a}`` is the one alternative ``a``. At most :data:`MAX_ALTERNATIVES` alternatives;
  more raises :class:`GlobError`.
- ``*`` and ``?`` match within one path segment; ``**`` as a whole segment matches any
  number of segments (none included), at the end of a pattern anything below.
- ``[abc]``, ``[a-z]``, ``[!abc]``/``[^abc]`` match one character, never ``/``. A ``[`` that
  does not start a valid class (no closing ``]``, a ``/`` inside, an invalid range) is a
  literal ``[``.
- Everything else is literal. Paths are relative and ``/``-separated.

:func:`glob_regex` is the matcher the toolkit uses; :func:`glob_alternatives` gives the same
pattern as alternatives of :class:`GlobPart` segments, for the engine; :func:`split_literal`
is the directory part a search starts from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

__all__ = [
    "GLOB_CHARS",
    "MAX_ALTERNATIVES",
    "GlobError",
    "GlobPart",
    "glob_alternatives",
    "glob_regex",
    "split_literal",
]

GLOB_CHARS = "*?[{"
"""A segment holding one of these is not read literally by :func:`split_literal`."""
MAX_ALTERNATIVES = 256
"""Brace alternatives one pattern may expand to."""

_Kind = Literal["lit", "star", "any", "class", "open", "comma", "close", "sep"]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str  # as written
    regex: str = ""  # for ``class`` tokens


class GlobError(ValueError):
    """A pattern that cannot be used (too many brace alternatives)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobPart:
    """One path segment of one alternative of a pattern.

    Attributes:
        text: the segment as written (for a literal one, the name it matches).
        regex: matches one name (``fullmatch``).
        literal: it has no wildcard and matches exactly ``text``.
        globstar: it is ``**``: any number of segments.
    """

    text: str
    regex: re.Pattern[str]
    literal: bool
    globstar: bool


def _class(pattern: str, start: int) -> tuple[int, str] | None:
    """The end index and regex of the class opened at ``start``, or None (a literal ``[``)."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    end = pattern.find("]", j)
    if end < 0:
        return None
    body = pattern[start + 1 : end]
    negate = body[:1] in ("!", "^")
    body = body[1:] if negate else body
    if "/" in body:
        return None
    chars = "".join(c if c == "-" and "--" not in body else re.escape(c) for c in body)
    regex = "[" + ("^/" if negate else "") + chars + "]"
    try:
        re.compile(regex)
    except re.error:
        return None
    return end, regex


def _tokens(pattern: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            j = i
            while j < len(pattern) and pattern[j] == "*":
                j += 1
            out.append(_Token("star", pattern[i:j]))
            i = j
            continue
        if c == "[" and (found := _class(pattern, i)) is not None:
            end, regex = found
            out.append(_Token("class", pattern[i : end + 1], regex))
            i = end + 1
            continue
        kind: _Kind = {"?": "any", "{": "open", ",": "comma", "}": "close", "/": "sep"}.get(
            c, "lit"
        )  # type: ignore[assignment]
        out.append(_Token(kind, c))
        i += 1
    return out


def _closes(tokens: list[_Token], i: int) -> bool:
    """Whether the ``{`` at ``i`` has a matching ``}``."""
    depth = 0
    for t in tokens[i:]:
        depth += 1 if t.kind == "open" else -1 if t.kind == "close" else 0
        if depth == 0:
            return True
    return False


def _sequence(tokens: list[_Token], i: int, inside: bool) -> tuple[list[list[_Token]], int]:
    """Alternatives of the tokens from ``i`` to the end (or a group's ``,``/``}``)."""
    acc: list[list[_Token]] = [[]]
    while i < len(tokens):
        t = tokens[i]
        if inside and t.kind in ("comma", "close"):
            break
        if t.kind == "open" and _closes(tokens, i):
            alternatives: list[list[_Token]] = []
            i += 1
            while True:
                seq, i = _sequence(tokens, i, True)
                alternatives.extend(seq)
                i += 1  # past the ``,`` or the ``}``
                if tokens[i - 1].kind == "close":
                    break
            acc = [a + b for a in acc for b in alternatives]
            if len(acc) > MAX_ALTERNATIVES:
                raise GlobError(
                    f"the pattern has more than {MAX_ALTERNATIVES} {{a,b}} alternatives; "
                    "use fewer braces, or several searches"
                )
            continue
        literal = t if t.kind not in ("open", "comma", "close") else _Token("lit", t.text)
        for a in acc:
            a.append(literal)
        i += 1
    return acc, i


def _part_regex(tokens: list[_Token]) -> str:
    out: list[str] = []
    for t in tokens:
        if t.kind == "star":
            out.append("[^/]*")
        elif t.kind == "any":
            out.append("[^/]")
        elif t.kind == "class":
            out.append(t.regex)
        else:
            out.append(re.escape(t.text))
    return "".join(out)


def _parts(tokens: list[_Token]) -> list[list[_Token]]:
    parts: list[list[_Token]] = [[]]
    for t in tokens:
        if t.kind == "sep":
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _is_globstar(part: list[_Token]) -> bool:
    return len(part) == 1 and part[0].kind == "star" and part[0].text == "**"


@lru_cache(maxsize=1024)
def _alternatives(pattern: str) -> tuple[tuple[tuple[_Token, ...], ...], ...]:
    expanded, _ = _sequence(_tokens(pattern), 0, False)
    return tuple(tuple(tuple(p) for p in _parts(alt)) for alt in expanded)


def glob_alternatives(pattern: str) -> tuple[tuple[GlobPart, ...], ...]:
    """The pattern as brace-free alternatives, each a tuple of path segments.

    Args:
        pattern: the glob pattern, e.g. ``src/**/*.{py,pyi}``.

    Raises:
        GlobError: it expands to more than :data:`MAX_ALTERNATIVES` alternatives.
    """
    return tuple(
        tuple(
            GlobPart(
                text="".join(t.text for t in part),
                regex=re.compile(_part_regex(list(part)), re.DOTALL),
                literal=all(t.kind == "lit" for t in part),
                globstar=_is_globstar(list(part)),
            )
            for part in alt
        )
        for alt in _alternatives(pattern)
    )


@lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex matching ``/``-separated relative paths against a glob pattern (``.match``).

    Args:
        pattern: the glob pattern, e.g. ``src/**/*.py`` or ``*.{ts,tsx}``.

    Raises:
        GlobError: it expands to more than :data:`MAX_ALTERNATIVES` alternatives.
    """
    branches: list[str] = []
    for alt in _alternatives(pattern):
        out: list[str] = []
        for k, part in enumerate(alt):
            last = k == len(alt) - 1
            if _is_globstar(list(part)):
                out.append(".*" if last else "(?:[^/]*/)*")
            else:
                out.append(_part_regex(list(part)) + ("" if last else "/"))
        branches.append("".join(out))
    return re.compile("(?:" + "|".join(branches) + r")\Z", re.DOTALL)


def split_literal(pattern: str) -> tuple[str, str]:
    """``(directory part without glob characters, the rest)`` of a pattern.

    Args:
        pattern: the glob pattern.
    """
    segments = pattern.split("/")
    literal: list[str] = []
    for seg in segments[:-1]:
        if any(ch in seg for ch in GLOB_CHARS):
            break
        literal.append(seg)
    return "/".join(literal), "/".join(segments[len(literal) :])
