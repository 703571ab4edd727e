"""What one simple command runs, read from its quote-removed words.

A shell runs the first word of a simple command after leading ``NAME=value`` assignments. A
*wrapper* runs another command given as its arguments, after options of its own:
``sudo -u root rm x`` runs ``rm x``. :func:`readings` follows assignments and the wrappers
of :data:`WRAPPERS` (their options included) to every command a line runs, plus the commands
of ``find -exec``/``-execdir``/``-ok``/``-okdir``. When a wrapper is given an option this
table does not know, it may take an argument or not, so both readings are kept.

:func:`opaque_scripts` says whether a command runs code the words do not show: ``eval``,
``trap``, ``source``/``.``, a shell (``bash``, ``sh``, ...) with ``-c`` or reading its
standard input, ``su -c``, ``watch``, ``env -S``, or a command name built by an expansion
(``$CMD``, a glob such as ``/bin/r?``). It also returns what text it can see of that code
(the ``-c`` string, a here-document, ``eval``'s arguments), so deny rules can look inside.

:func:`ansi_c` decodes the body of a ``$'...'`` word as bash does.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_READINGS",
    "SHELLS",
    "WRAPPERS",
    "Word",
    "ansi_c",
    "opaque_scripts",
    "primary",
    "readings",
]

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish"})
_EVALS = frozenset({"eval", "trap"})
_SOURCES = frozenset({"source", "."})
_EXEC_FLAGS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
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


def _env_assignment(text: str) -> bool:
    """``NAME=value`` as ``env`` and ``sudo`` read it: any word with ``=`` in it."""
    return "=" in text


@dataclass(frozen=True, slots=True)
class _Options:
    """How a wrapper reads its options before the command it runs."""

    with_arg: str = ""  # short options taking an argument (attached or the next word)
    flags: str = ""  # short options without one
    optional: str = ""  # short options whose argument can only be attached (xargs -i)
    long_with_arg: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    stops: str = ""  # short options that make it run nothing (command -v)
    assignments: bool = False  # NAME=value words may follow (env, sudo)
    operands: int = 0  # words before the command (timeout's duration)
    script: frozenset[str] = frozenset()  # options whose argument is split as a script


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: Mapping[str, _Options] = {
    "sudo": _Options(
        with_arg="ugpCDhrtTRU",
        flags="AbEHiKklnPSsVv",
        long_with_arg=_names(
            "user group prompt close-from chdir host role type command-timeout other-user chroot"
        ),
        long_flags=_names(
            "preserve-env login shell non-interactive background askpass set-home stdin "
            "reset-timestamp remove-timestamp list validate preserve-groups bell"
        ),
        assignments=True,
    ),
    "doas": _Options(with_arg="uC", flags="nsL"),
    "env": _Options(
        with_arg="uCSP",
        flags="i0v",
        long_with_arg=_names("unset chdir split-string"),
        long_flags=_names("ignore-environment null debug"),
        assignments=True,
        script=frozenset({"S", "split-string"}),
    ),
    "command": _Options(flags="pvV", stops="vV"),
    "builtin": _Options(),
    "exec": _Options(with_arg="a", flags="cl"),
    "nohup": _Options(),
    "time": _Options(
        with_arg="fo",
        flags="pavqV",
        long_with_arg=_names("format output"),
        long_flags=_names("append verbose quiet portability"),
    ),
    "nice": _Options(with_arg="n", flags="0123456789", long_with_arg=_names("adjustment")),
    "ionice": _Options(with_arg="cnPpu", flags="t", long_with_arg=_names("class classdata")),
    "timeout": _Options(
        with_arg="sk",
        flags="v",
        long_with_arg=_names("signal kill-after"),
        long_flags=_names("preserve-status foreground verbose"),
        operands=1,
    ),
    "stdbuf": _Options(with_arg="ioe", long_with_arg=_names("input output error")),
    "setsid": _Options(flags="cfw", long_flags=_names("ctty fork wait")),
    "xargs": _Options(
        with_arg="aEdILnPs",
        flags="0prtxo",
        optional="eil",
        long_with_arg=_names(
            "arg-file delimiter eof replace max-lines max-args max-procs max-chars process-slot-var"
        ),
        long_flags=_names("null interactive no-run-if-empty verbose exit open-tty show-limits"),
    ),
}


def _short(word: str, spec: _Options) -> tuple[int, bool, str | None, bool]:
    """A short-option cluster: (words used, known, the script option's argument, arg pending)."""
    known = True
    for j in range(1, len(word)):
        ch = word[j]
        if ch in spec.with_arg:
            attached = word[j + 1 :]
            is_script = ch in spec.script
            if attached:
                return 1, known, attached if is_script else None, False
            return 2, known, None, is_script
        if ch in spec.optional:
            return 1, known, None, False
        if ch not in spec.flags:
            known = False
    return 1, known, None, False


def _after_wrapper(
    words: Sequence[Word], spec: _Options, scripts: list[str]
) -> tuple[int, list[int]]:
    """Where the wrapped command starts, and other starts an unknown option makes possible."""
    i, n = 1, len(words)
    others: list[int] = []
    while i < n:
        w = words[i].value
        if w == "--":
            i += 1
            break
        if w.startswith("--"):
            name, eq, arg = w[2:].partition("=")
            if name in spec.script:
                if eq:
                    scripts.append(arg)
                elif i + 1 < n:
                    scripts.append(words[i + 1].value)
            if eq or name in spec.long_flags:
                i += 1
            elif name in spec.long_with_arg:
                i += 2
            else:
                others.append(i + 2)
                i += 1
            continue
        if w == "-" and spec.assignments:  # ``env -`` is ``env -i``
            i += 1
            continue
        if w.startswith("-") and len(w) > 1:
            if any(ch in spec.stops for ch in w[1:]):
                return n, []
            used, known, script, pending = _short(w, spec)
            if script is not None:
                scripts.append(script)
            if pending and i + 1 < n:
                scripts.append(words[i + 1].value)
            if not known:
                others.append(i + used + 1)
            i += used
            continue
        break
    if spec.assignments:
        while i < n and _env_assignment(words[i].value):
            i += 1
    i += spec.operands
    return i, [o + spec.operands for o in others if o < n]


def _exec_commands(words: Sequence[Word]) -> list[tuple[int, int]]:
    """Where the commands of ``find ... -exec cmd args ;`` are (``-execdir``, ``-ok``, ...)."""
    out: list[tuple[int, int]] = []
    i = 1
    while i < len(words):
        if words[i].value in _EXEC_FLAGS:
            j = i + 1
            while j < len(words) and words[j].value not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append((i + 1, j))
            i = j
        i += 1
    return out


def readings(
    words: Sequence[Word], scripts: list[str] | None = None
) -> tuple[list[tuple[Word, ...]], bool]:
    """Every command ``words`` runs: the words themselves, then through assignments and wrappers.

    The first reading is the words as given, then (breadth first) the command behind the
    leading assignments, behind an expansion in command position, behind each wrapper (the
    reading of :data:`WRAPPERS` before the others an unknown option allows), and in
    ``find -exec``. ``env -S`` strings are added to ``scripts``.

    Args:
        words: the words of one simple command (redirections removed).
        scripts: collects the script arguments of wrappers (``env -S``).

    Returns:
        The readings, and whether there were more than :data:`MAX_READINGS` (the rest
        are not read; the caller treats the command as opaque).
    """
    base = tuple(words)
    found: list[tuple[Word, ...]] = []
    seen: set[tuple[int, int, str | None]] = set()
    sink = scripts if scripts is not None else []
    # a reading is base[start:end], its first word replaced by ``head`` when that is set
    queue: deque[tuple[int, int, str | None, bool]] = deque([(0, len(base), None, True)])
    while queue:
        start, end, head_value, top = queue.popleft()
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
        found.append(ws)
        i = 0
        while top and i < len(ws) and ws[i].assign:
            i += 1
        if i:
            queue.append((start + i, end, None, False))
            continue
        head = ws[0]
        if not head.literal:  # ``$EMPTY rm x`` runs ``rm x`` when the expansion is empty
            k = next((j for j, w in enumerate(ws) if w.literal), len(ws))
            queue.append((start + k, end, None, False))  # every leading expansion empty
            queue.append((start + 1, end, None, False))
            if head.unexpanded:
                queue.append((start, end, head.unexpanded, False))
            continue
        spec = WRAPPERS.get(head.value)
        if spec is not None:
            first, others = _after_wrapper(ws, spec, sink)
            queue.extend((start + j, end, None, False) for j in (first, *others))
        if head.value == "find":
            queue.extend((start + a, start + b, None, False) for a, b in _exec_commands(ws))
    return found, False


def primary(words: Sequence[Word]) -> tuple[Word, ...]:
    """The command ``words`` runs, through assignments and wrappers as :data:`WRAPPERS` reads."""
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
        start, _ = _after_wrapper(current, spec, [])
        if start >= len(current):
            return current
        current = current[start:]
    return current


def _shell_script(words: Sequence[Word], stdin: Sequence[str]) -> tuple[bool, list[str]]:
    """A shell invocation: opaque unless it runs a named script file; its visible code."""
    i, has_c, has_s = 1, False, False
    while i < len(words):
        w = words[i].value
        if w == "--" or w == "-":
            i += 1
            break
        if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if w.startswith("--"):
            if w in ("--version", "--help"):
                return False, []
            i += 1
            continue
        if len(w) > 1 and w[0] in "-+":
            has_c = has_c or (w[0] == "-" and "c" in w[1:])
            has_s = has_s or (w[0] == "-" and "s" in w[1:])
            i += 1
            continue
        break
    if has_c:
        return True, [words[i].value] if i < len(words) else []
    if i < len(words) and not has_s and words[i].literal:
        return False, []  # ``bash script.sh``: a named script file
    return True, list(stdin)  # reads its input (or a script made by ``<(...)``, ``$F``)


def _option_argument(words: Sequence[Word], option: str) -> list[str]:
    for i, w in enumerate(words[1:-1], start=1):
        if w.value == option:
            return [words[i + 1].value]
    return []


def opaque_scripts(words: Sequence[Word], stdin: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether the command runs code its words do not show, and the code text visible.

    Args:
        words: one reading of the command (see :func:`readings`).
        stdin: here-document bodies and here-strings fed to it.
    """
    if not words:
        return False, []
    head = words[0]
    name = head.value
    if head.assign:
        return False, []  # an assignment line; the command after it is another reading
    if not head.literal:
        return True, []
    if name in _EVALS:
        rest = [w.value for w in words[1:]]
        return True, [" ".join(rest) if name == "eval" else (rest[0] if rest else "")]
    if name in _SOURCES:
        return True, []
    if name in SHELLS:
        return _shell_script(words, stdin)
    if name == "su":
        return True, _option_argument(words, "-c")
    if name == "watch":
        i = 1
        while i < len(words) and words[i].value.startswith("-"):
            i += 2 if words[i].value in ("-n", "--interval") else 1
        return True, [" ".join(w.value for w in words[i:])]
    return False, []


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
