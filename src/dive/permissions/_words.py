"""What one simple command runs, read from its quote-removed words.

A shell runs the first word of a simple command after leading ``NAME=value`` assignments. A
*wrapper* runs another command given as its arguments, after options of its own:
``sudo -u root rm x`` runs ``rm x``. :func:`readings` follows assignments and the wrappers
of ``_wrappers.WRAPPERS`` (their options included) to every command a line runs, plus the
commands of ``find -exec``/``-execdir``/``-ok``/``-okdir``; a command named by a path
(``/bin/rm``, ``./../bin/rm``) is also read by its last component (``rm``). When a wrapper is
given an option the table does not know, it may take an argument or not, so both readings
are kept. Each :class:`Reading` says whether it is a command another one runs (``wrapped``):
an allow rule for ``env`` or ``timeout`` must not allow what they run.

:func:`ansi_c` decodes the body of a ``$'...'`` word as bash does.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from dive.permissions._wrappers import WRAPPERS, after_wrapper, exec_commands

__all__ = ["MAX_READINGS", "Reading", "Word", "ansi_c", "primary", "readings"]

_MAX_DEPTH = 16
MAX_READINGS = 256
"""Readings of one command :func:`readings` gives at most."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Word:
    """One word of a simple command.

    Attributes:
        value: the word after quote removal (expansions such as ``$X`` left as written).
        assign: an unquoted ``NAME=value`` the shell treats as an assignment.
        literal: no unquoted or double-quoted expansion and no glob character in it.
        unexpanded: the value with its ``$`` expansions left out (what it is when they
            expand to nothing).
    """

    value: str
    assign: bool = False
    literal: bool = True
    unexpanded: str | None = None


class Reading(NamedTuple):
    """One command a simple command runs: its words, and whether another command runs it."""

    words: tuple[Word, ...]
    wrapped: bool


class _Next(NamedTuple):
    start: int
    end: int
    head: str | None  # replaces the first word when set
    top: bool  # leading assignments are still to be read
    wrapped: bool


def readings(words: Sequence[Word], scripts: list[str] | None = None) -> tuple[list[Reading], bool]:
    """Every command ``words`` runs: the words themselves, then through assignments and wrappers.

    The first reading is the words as given, then (breadth first) the command behind the
    leading assignments, behind an expansion in command position, behind each wrapper (the
    reading of the table before the others an unknown option allows), in ``find -exec``,
    and the last component of a command named by its path. ``env -S`` strings are added to
    ``scripts``.

    Args:
        words: the words of one simple command (redirections removed).
        scripts: collects the script arguments of wrappers (``env -S``).

    Returns:
        The readings, and whether there were more than :data:`MAX_READINGS` (the rest
        are not read; the caller treats the command as opaque).
    """
    base = tuple(words)
    found: list[Reading] = []
    seen: set[tuple[int, int, str | None]] = set()
    sink = scripts if scripts is not None else []
    queue: deque[_Next] = deque([_Next(0, len(base), None, True, False)])
    while queue:
        start, end, head_value, top, wrapped = queue.popleft()
        key = (start, end, head_value)
        if start >= end or key in seen:
            continue  # read already (a wrapper's readings often meet again)
        if len(found) == MAX_READINGS:
            return found, True
        seen.add(key)
        ws = (
            base[start:end]
            if head_value is None
            else (Word(value=head_value), *base[start + 1 : end])
        )
        found.append(Reading(ws, wrapped))
        queue.extend(_following(ws, start, end, top, wrapped, sink))
    return found, False


def _following(
    ws: tuple[Word, ...], start: int, end: int, top: bool, wrapped: bool, sink: list[str]
) -> list[_Next]:
    """The readings one reading leads to."""
    i = 0
    while top and i < len(ws) and ws[i].assign:
        i += 1
    if i:
        return [_Next(start + i, end, None, False, True)]
    head = ws[0]
    if not head.literal:  # ``$EMPTY rm x`` runs ``rm x`` when the expansion is empty
        k = next((j for j, w in enumerate(ws) if w.literal), len(ws))
        out = [_Next(start + k, end, None, False, True), _Next(start + 1, end, None, False, True)]
        if head.unexpanded:
            out.append(_Next(start, end, head.unexpanded, False, True))
        return out
    out: list[_Next] = []
    name = head.value
    if "/" in name:
        base_name = name.rstrip("/").rsplit("/", 1)[-1]
        if base_name and base_name != name:  # ``/bin/rm`` runs ``rm``; the same command
            out.append(_Next(start, end, base_name, False, wrapped))
    spec = WRAPPERS.get(name)
    if spec is not None:
        first, others = after_wrapper(ws, spec, sink)
        out.extend(_Next(start + j, end, None, False, True) for j in (first, *others))
    if name == "find":
        out.extend(_Next(start + a, start + b, None, False, True) for a, b in exec_commands(ws))
    return out


def primary(words: Sequence[Word]) -> tuple[Word, ...]:
    """The command ``words`` runs, through assignments and wrappers as the table reads them."""
    i = 0
    while i < len(words) and words[i].assign:
        i += 1
    current = tuple(words[i:])
    for _ in range(_MAX_DEPTH):
        if not current:
            return current
        spec = WRAPPERS.get(current[0].value) if current[0].literal else None
        if spec is None:
            return current
        start, _ = after_wrapper(current, spec, [])
        if start >= len(current):
            return current
        current = current[start:]
    return current


_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_HEX_WIDTH = {"x": 2, "u": 4, "U": 8}


def ansi_c(body: str) -> str:
    """The value of ``$'...'`` (bash's escapes; an invalid code point stays as written)."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\" or i + 1 == len(body):
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            continue
        if e == "c" and i < len(body):
            out.append(chr(ord(body[i]) & 0x1F))
            i += 1
            continue
        if e in "01234567":
            more = re.match(r"[0-7]{0,2}", body[i:])
            digits, base = e + (more.group() if more else ""), 8
            i += len(digits) - 1
        elif e in _HEX_WIDTH and (m := re.match(rf"[0-9A-Fa-f]{{1,{_HEX_WIDTH[e]}}}", body[i:])):
            digits, base = m.group(), 16
            i += len(digits)
        else:
            out.append("\\" + e)
            continue
        code = int(digits, base)
        out.append(chr(code) if code <= 0x10FFFF else "\\" + e + digits)
    return "".join(out)
