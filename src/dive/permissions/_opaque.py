"""Opaque commands: they run code their words do not show.

:func:`opaque_scripts` looks at one reading of a command and says whether it runs code that
is not among its words, and what text of that code it can see (so deny rules can look
inside): ``eval``, ``trap``, ``source``/``.``, a shell (``bash``, ``sh``, ...) with ``-c`` or
reading its standard input, ``su -c``, ``script -c``, ``watch``, ``at``, ``parallel``,
``alias`` (an alias is code for later lines), ``mapfile -C``, ``hash -p`` and ``enable -f``
(they change what a name runs), a ``sed`` script with an ``e`` or ``w`` command or flag (or
read from a file), and a command name built by an expansion (``$CMD``, a glob such as
``/bin/r?``).

A *name argument* with a subscript is opaque too: bash evaluates the subscript of
``printf -v 'a[$(cmd)]'``, ``read 'a[...]'``, ``declare 'a[...]=x'``, ``test -v 'a[...]'``
and ``let`` as arithmetic, and that runs its command substitutions; so do ``[[ … -eq … ]]``
on a variable's value and ``declare -n``/``-i``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import pairwise
from typing import Protocol

from dive.permissions._sed import sed_runs_code

__all__ = ["SHELLS", "opaque_scripts"]

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
_EVALS = frozenset({"eval", "trap"})
_SOURCES = frozenset({"source", "."})
_STDIN_RUNNERS = frozenset({"at", "batch"})
_NAMERS = frozenset(
    {"read", "declare", "typeset", "local", "export", "readonly", "unset", "let", "[["}
)
_DECLARERS = frozenset({"declare", "typeset", "local", "export", "readonly"})
_TESTS = frozenset({"test", "[", "[["})
_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
_ARITH_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_NUMBER = re.compile(r"[+-]?(?:0[xX][0-9A-Fa-f]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+)")


class _Valued(Protocol):
    @property
    def value(self) -> str: ...

    @property
    def literal(self) -> bool: ...

    @property
    def assign(self) -> bool: ...


def _shell_script(words: Sequence[_Valued], stdin: Sequence[str]) -> tuple[bool, list[str]]:
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


def _option_argument(words: Sequence[_Valued], *options: str) -> list[str]:
    """The arguments of ``-c x``, ``--command x`` and ``--command=x`` among ``words``."""
    out: list[str] = []
    for i, w in enumerate(words[1:], start=1):
        name, eq, attached = w.value.partition("=")
        if eq and name in options and name.startswith("--"):
            out.append(attached)
        elif w.value in options and i + 1 < len(words):
            out.append(words[i + 1].value)
    return out


def _names_code(name: str, args: list[str]) -> bool:
    """A builtin taking variable names whose arguments make bash evaluate arithmetic."""
    if name == "printf" or (name in _TESTS and name != "[["):
        return any(a == "-v" and _SUBSCRIPT.match(b) for a, b in pairwise(args))
    if name not in _NAMERS:
        return False
    if any(_SUBSCRIPT.match(a) for a in args):
        return True
    if name == "let":
        return any(re.search(r"[A-Za-z_$]", _NUMBER.sub("", a)) for a in args)
    if name == "[[":  # ``-eq`` and friends evaluate a variable's value as arithmetic
        return any(
            args[i] in _ARITH_TEST
            and not (_NUMBER.fullmatch(args[i - 1]) and _NUMBER.fullmatch(args[i + 1]))
            for i in range(1, len(args) - 1)
        )
    if name in _DECLARERS:
        return any(a.startswith("-") and ("n" in a or "i" in a) for a in args)
    return False


def opaque_scripts(words: Sequence[_Valued], stdin: Sequence[str]) -> tuple[bool, list[str]]:
    """Whether the command runs code its words do not show, and the code text visible.

    Args:
        words: one reading of the command (see ``_words.readings``).
        stdin: here-document bodies and here-strings fed to it.
    """
    if not words:
        return False, []
    head = words[0]
    name = head.value
    args = [w.value for w in words[1:]]
    if head.assign:
        return False, []  # an assignment line; the command after it is another reading
    if not head.literal:
        return True, []
    if name in _EVALS:
        return True, [" ".join(args) if name == "eval" else (args[0] if args else "")]
    if name in _SOURCES:
        return True, []
    if name in SHELLS:
        return _shell_script(words, stdin)
    if name == "su":
        return True, _option_argument(words, "-c", "--command")
    if name == "script":
        return True, _option_argument(words, "-c", "--command")
    if name == "watch":
        i = 1
        while i < len(words) and words[i].value.startswith("-"):
            i += 2 if words[i].value in ("-n", "--interval") else 1
        return True, [" ".join(w.value for w in words[i:])]
    if name in _STDIN_RUNNERS:
        return True, list(stdin)
    if name == "parallel":
        return True, [" ".join(a for a in args if not a.startswith(":::"))]
    if name == "alias":
        defined = [a.partition("=")[2] for a in args if "=" in a]
        return bool(defined), defined
    if name in ("mapfile", "readarray"):
        return "-C" in args, _option_argument(words, "-C")
    if name in ("hash", "enable") and any(a.startswith("-") and set(a) & set("pf") for a in args):
        return True, []
    if name in ("complete", "compgen") and any(a in ("-C", "-F") for a in args):
        return True, _option_argument(words, "-C")
    if name == "sed":
        return sed_runs_code(args), []
    return _names_code(name, args), []
