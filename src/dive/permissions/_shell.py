"""Shell-aware splitting of a command into the simple commands it runs.

``split_command`` walks the text once, honouring quotes the way a POSIX shell does, and cuts
it into the commands a shell would run: at ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&``,
newlines and subshell parentheses, and it lifts out the commands of ``$( )``, ``<( )``,
``>( )`` and backticks (nested to any depth, inside double quotes too, where a shell still
expands them). Single quotes make everything literal; a backslash escapes one character
(a backslash-newline joins lines); ``#`` at the start of a word starts a comment.

Each :class:`Segment` keeps its text (runs of unquoted whitespace collapsed, leading shell
keywords such as ``if``/``then``/``do`` dropped), its *bare* text (also without leading
``NAME=value`` assignments and transparent wrappers: ``sudo``, ``env``, ``command``,
``exec``, ``nohup``, ``time``, ``builtin``), and whether it redirects output to a file
(``>``, ``>>``, ``>|``, ``&>`` to anything but a file descriptor or ``/dev/null``). Allow
rules look at the text (an assignment such as ``LD_PRELOAD=...`` changes what a command
does), deny rules at both.

A command that does not parse (an unbalanced quote, parenthesis or backtick, or nesting
deeper than 64 levels) comes back with ``complete=False`` and a best-effort split that adds
a quote-blind one: allow rules never match it, deny rules still look at every part.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Segment", "ShellSplit", "split_command"]

_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "builtin"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "!", "{", "time"})
_CLOSERS = frozenset({"fi", "done", "esac", "}"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_REDIRECT = re.compile(r"&?>{1,2}\|?")
_FD_TARGET = re.compile(r"&(\d+|-)")
_DEV_NULL = re.compile(r"/dev/null(?=$|[\s;&|)<>])")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One simple command of a shell command line.

    Attributes:
        text: the command, unquoted whitespace collapsed, leading shell keywords dropped.
        bare: ``text`` without leading ``NAME=value`` assignments and wrapper words.
        writes: it redirects output to a file.
    """

    text: str
    bare: str
    writes: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellSplit:
    """The simple commands of a command line; ``complete`` is False when it did not parse."""

    segments: tuple[Segment, ...]
    complete: bool


class _Unbalanced(Exception):
    """The command has an unbalanced quote, parenthesis or backtick (or nests too deep)."""


def _drop_leading(words: list[str], drop: Callable[[str], bool]) -> list[str]:
    i = 0
    while i < len(words) and drop(words[i]):
        i += 1
    return words[i:]


def _is_wrapper(word: str) -> bool:
    return word in _WRAPPERS or word in _KEYWORDS or _ASSIGNMENT.match(word) is not None


def _segment(text: str, writes: bool = False) -> Segment | None:
    """The segment of a normalized command text (None when only keywords are left)."""
    words = _drop_leading(text.split(" "), lambda w: w in _KEYWORDS or w in _CLOSERS or not w)
    if not words:
        return None
    bare = _drop_leading(words, _is_wrapper)
    return Segment(text=" ".join(words), bare=" ".join(bare) or " ".join(words), writes=writes)


class _Scanner:
    """One pass over a command line; nested substitutions recurse with their own buffer."""

    def __init__(self, text: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise _Unbalanced
        self.text = text
        self.pos = 0
        self.depth = depth
        self.segments: list[Segment] = []

    # --- segments -----------------------------------------------------------------------------

    def _flush(self, buf: list[str], writes: list[bool]) -> None:
        segment = _segment("".join(buf).strip(), writes[0])
        buf.clear()
        writes[0] = False
        if segment is not None:
            self.segments.append(segment)

    # --- the scanner --------------------------------------------------------------------------

    def commands(self, closer: str | None) -> None:
        """Scan commands up to ``closer`` (``)``) or the end; raise ``_Unbalanced``."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Unbalanced
        try:
            self._commands(closer)
        finally:
            self.depth -= 1

    def _commands(self, closer: str | None) -> None:
        text, buf, writes = self.text, list[str](), [False]
        while self.pos < len(text):
            c = text[self.pos]
            nxt = text[self.pos + 1] if self.pos + 1 < len(text) else ""
            if c == ")":
                if closer != ")":
                    raise _Unbalanced
                self.pos += 1
                self._flush(buf, writes)
                return
            if c in " \t":
                if buf and buf[-1] != " ":
                    buf.append(" ")
                self.pos += 1
            elif c == "\\":
                if nxt == "\n":
                    self.pos += 2
                    if buf and buf[-1] != " ":
                        buf.append(" ")
                else:
                    buf.append(text[self.pos : self.pos + 2])
                    self.pos += 2
            elif c == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    buf.append(text[self.pos :])
                    self.pos = len(text)
                    self._flush(buf, writes)
                    raise _Unbalanced
                buf.append(text[self.pos : end + 1])
                self.pos = end + 1
            elif c == '"':
                self._double(buf, writes)
            elif c == "`":
                self._backtick(buf)
            elif c in "$<>" and nxt == "(":
                self._substitution(buf)
            elif c == ">" or (c == "&" and nxt == ">"):
                self._redirect(buf, writes)
            elif c == "#" and (not buf or buf[-1] == " "):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif c in ";\n":
                self._flush(buf, writes)
                self.pos += 1
            elif c == "&":
                if buf and buf[-1] in "<>":
                    buf.append(c)  # ``2>&1`` style descriptor duplication
                    self.pos += 1
                else:
                    self._flush(buf, writes)
                    self.pos += 2 if nxt == "&" else 1
            elif c == "|":
                self._flush(buf, writes)
                self.pos += 2 if nxt != "" and nxt in "|&" else 1
            elif c == "(":
                self._flush(buf, writes)
                self.pos += 1
                self.commands(")")
            else:
                buf.append(c)
                self.pos += 1
        self._flush(buf, writes)
        if closer is not None:
            raise _Unbalanced

    def _double(self, buf: list[str], writes: list[bool]) -> None:
        """A double-quoted string: literal but for escapes and substitutions."""
        text = self.text
        start = self.pos
        self.pos += 1
        while self.pos < len(text):
            c = text[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == '"':
                self.pos += 1
                buf.append(text[start : self.pos])
                return
            elif c == "`":
                buf.append(text[start : self.pos])
                self._backtick(buf)
                start = self.pos
            elif c == "$" and text[self.pos + 1 : self.pos + 2] == "(":
                buf.append(text[start : self.pos])
                self._substitution(buf)
                start = self.pos
            else:
                self.pos += 1
        buf.append(text[start:])
        self._flush(buf, writes)
        raise _Unbalanced

    def _substitution(self, buf: list[str]) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)``: its commands become segments of their own."""
        start = self.pos
        self.pos += 2
        self.commands(")")
        buf.append(self.text[start : self.pos])

    def _backtick(self, buf: list[str]) -> None:
        """A backtick substitution: unescape one level and split its content recursively."""
        text = self.text
        start = self.pos
        i = self.pos + 1
        inner: list[str] = []
        while i < len(text):
            c = text[i]
            if c == "\\" and i + 1 < len(text) and text[i + 1] in "`\\$":
                inner.append(text[i + 1])
                i += 2
            elif c == "`":
                break
            else:
                inner.append(c)
                i += 1
        else:
            self.pos = len(text)
            raise _Unbalanced
        nested = _Scanner("".join(inner), self.depth + 1)
        try:
            nested.commands(None)
        finally:
            self.segments.extend(nested.segments)
        self.pos = i + 1
        buf.append(text[start : self.pos])

    def _redirect(self, buf: list[str], writes: list[bool]) -> None:
        """An output redirection; a target other than a descriptor or /dev/null is a write."""
        text = self.text
        m = _REDIRECT.match(text, self.pos)
        assert m is not None
        buf.append(m.group())
        self.pos = m.end()
        rest = text[self.pos :].lstrip(" \t")
        if _FD_TARGET.match(rest) or _DEV_NULL.match(rest):
            return
        writes[0] = True


def _naive(text: str) -> tuple[Segment, ...]:
    """A quote-blind split for commands that do not parse (deny rules still see every part)."""
    out: list[Segment] = []
    for part in re.split(r"&&|\|\||[;&|\n`()]|\$\(", text):
        segment = _segment(" ".join(part.split()))
        if segment is not None:
            out.append(segment)
    return tuple(out)


def _inner_script(segment: Segment) -> str | None:
    """The script of ``bash -c '...'`` (``sh``, ``zsh``, ``dash``) or ``eval ...``, if any."""
    first = segment.bare.split(" ", 1)[0]
    if first not in _SHELLS and first != "eval":
        return None
    try:
        words = shlex.split(segment.bare)
    except ValueError:
        raise _Unbalanced from None
    if first == "eval":
        return " ".join(words[1:])
    for i, w in enumerate(words[1:-1], start=1):
        if w.startswith("-") and not w.startswith("--") and "c" in w:
            return words[i + 1]
    return None


def _split(command: str, depth: int) -> tuple[list[Segment], bool]:
    scanner = _Scanner(command, depth)
    complete = True
    try:
        scanner.commands(None)
    except _Unbalanced:
        complete = False
    out: list[Segment] = []
    for segment in scanner.segments:
        out.append(segment)
        try:
            script = _inner_script(segment)
        except _Unbalanced:
            complete = False
            continue
        if script is not None:
            inner, ok = _split(script, depth + 8)
            out.extend(inner)
            complete = complete and ok
    return out, complete


def split_command(command: str) -> ShellSplit:
    """Split ``command`` into the simple commands a shell would run.

    The script of ``bash -c '...'`` (also ``sh``, ``zsh``, ``dash``) and of ``eval`` is split
    too, and its commands added.

    Args:
        command: the command line.

    Returns:
        The segments in the order they were found (a substitution's commands come before
        the command that contains them), and whether the command parsed.
    """
    segments, complete = _split(command, 0)
    if not complete:
        seen = {s.text for s in segments}
        segments.extend(s for s in _naive(command) if s.text not in seen)
    return ShellSplit(segments=tuple(segments), complete=complete)
