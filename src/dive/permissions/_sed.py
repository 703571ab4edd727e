"""Whether a ``sed`` command runs code or writes files its words do not name.

GNU sed's ``e`` command and the ``e`` flag of ``s///`` run shell commands; ``w``/``W`` and the
``w`` flag write files. A rule such as ``Bash(sed:*)`` must not allow them, so
:func:`sed_runs_code` reads the script (``-e``/``--expression`` arguments, or the first
operand) command by command, the way GNU sed does (addresses, regular expressions with
bracket expressions, ``s`` and ``y`` with any delimiter, text of ``a``/``i``/``c``, labels,
file names). A script read from a file (``-f``), an option or a command it does not know, or a
script it cannot read to the end counts as running code. ``--sandbox`` (which makes sed refuse
``e``, ``r`` and ``w``) counts as safe.
"""

from __future__ import annotations

__all__ = ["sed_runs_code"]

_FLAGS = frozenset("nsEruzb")
_LONG_FLAGS = frozenset(
    [
        "--quiet",
        "--silent",
        "--regexp-extended",
        "--separate",
        "--unbuffered",
        "--null-data",
        "--binary",
        "--posix",
        "--debug",
        "--follow-symlinks",
    ]
)
_PLAIN_COMMANDS = frozenset("=dDgGhHnNpPxzF")
_CODE_COMMANDS = frozenset("ewW")


class _Unreadable(Exception):
    pass


def sed_runs_code(args: list[str]) -> bool:
    """Whether ``sed`` with these arguments may run a command or write a file by its script."""
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--sandbox":
            return False
        if a == "--":
            operands.extend(args[i + 1 :])
            break
        if a.startswith("--expression="):
            scripts.append(a.partition("=")[2])
        elif a in ("--expression", "-e"):
            if i + 1 >= len(args):
                return True
            scripts.append(args[i + 1])
            i += 1
        elif a.startswith(("--file", "--in-place", "--line-length")):
            if a.startswith("--file"):
                return True
        elif a.startswith("--"):
            if a not in _LONG_FLAGS:
                return True
        elif a.startswith("-") and len(a) > 1:
            for j, ch in enumerate(a[1:], start=1):
                if ch in "ef":
                    if ch == "f":
                        return True
                    rest = a[j + 1 :]
                    if not rest and i + 1 >= len(args):
                        return True
                    scripts.append(rest or args[i + 1])
                    i += 0 if rest else 1
                    break
                if ch in "il":  # -i[SUFFIX], -l N: the rest of the word is the argument
                    if ch == "l" and not a[j + 1 :]:
                        i += 1
                    break
                if ch not in _FLAGS:
                    return True
        else:
            operands.append(a)
        i += 1
    if not scripts:
        if not operands:
            return False  # no script: sed only reports the usage error
        scripts.append(operands[0])
    try:
        return any(_runs(s) for s in scripts)
    except _Unreadable:
        return True


def _runs(script: str) -> bool:
    """Whether one script has a command or flag that runs code or writes a file."""
    r = _Script(script)
    while True:
        r.skip(" \t\n;")
        if r.done():
            return False
        r.address()
        c = r.take()
        if c in "{}":
            continue
        if c == "#":
            r.line()
            continue
        if c in ":btT":
            r.label()
        elif c in "aic":
            r.text_lines()
        elif c in "rR":
            r.line()
        elif c in _CODE_COMMANDS:
            return True
        elif c == "s":
            d = r.take()
            r.regex(d)
            r.replacement(d)
            flags = r.word_until(";}\n#")
            if "e" in flags or "w" in flags:
                return True
        elif c == "y":
            d = r.take()
            r.replacement(d)
            r.replacement(d)
        elif c in "qQlLv":
            r.word_until(";}\n#")
        elif c not in _PLAIN_COMMANDS:
            return True


class _Script:
    """A cursor over a sed script (raises ``_Unreadable`` where it cannot follow it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def done(self) -> bool:
        return self.i >= len(self.text)

    def take(self) -> str:
        if self.done():
            raise _Unreadable
        c = self.text[self.i]
        self.i += 1
        return c

    def skip(self, chars: str) -> None:
        while not self.done() and self.text[self.i] in chars:
            self.i += 1

    def line(self) -> None:
        end = self.text.find("\n", self.i)
        self.i = len(self.text) if end < 0 else end + 1

    def label(self) -> None:
        self.word_until(";\n")

    def word_until(self, stops: str) -> str:
        start = self.i
        while not self.done() and self.text[self.i] not in stops:
            self.i += 1
        return self.text[start : self.i]

    def text_lines(self) -> None:
        """The text of ``a``/``i``/``c``: to the end of the line (a backslash continues it)."""
        while not self.done():
            c = self.take()
            if c == "\\":
                self.take()
            elif c == "\n":
                return

    def address(self) -> None:
        for part in range(2):
            self.skip(" \t")
            if self.done():
                return
            c = self.text[self.i]
            if c.isdigit() or c in "+~":
                self.i += 1
                self.skip("0123456789~")
            elif c == "$":
                self.i += 1
            elif c == "/" or c == "\\":
                self.i += 1
                self.regex("/" if c == "/" else self.take())
                self.skip("IM")
            elif part == 1:
                raise _Unreadable  # a range without its second address
            else:
                break
            self.skip(" \t")
            if part == 0 and not self.done() and self.text[self.i] == ",":
                self.i += 1
                continue
            break
        self.skip(" \t!")

    def regex(self, delimiter: str) -> None:
        """A regular expression up to ``delimiter`` (bracket expressions hide it)."""
        while True:
            c = self.take()
            if c == "\\":
                self.take()
            elif c == "[":
                self._bracket()
            elif c == delimiter:
                return

    def _bracket(self) -> None:
        if self.text.startswith("^", self.i):
            self.i += 1
        if self.text.startswith("]", self.i):
            self.i += 1
        while True:
            c = self.take()
            if c == "[" and not self.done() and self.text[self.i] in ":.=":
                end = self.text.find(self.text[self.i] + "]", self.i + 1)
                if end < 0:
                    raise _Unreadable
                self.i = end + 2
            elif c == "]":
                return

    def replacement(self, delimiter: str) -> None:
        while True:
            c = self.take()
            if c == "\\":
                self.take()
            elif c == delimiter:
                return
