"""Shell-aware splitting of a command into the simple commands it runs.

``split_command`` walks the text once, honouring quotes the way bash does, and cuts it into
the commands a shell would run: at ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&``, newlines,
subshell parentheses and ``{ ...; }`` groups (function bodies included), and it lifts out the
commands of ``$( )``, ``<( )``, ``>( )``, backticks and ``${...}`` (nested to any depth,
inside double quotes, arithmetic and unquoted here-documents too, where bash still expands
them). Arithmetic (``$((…))``, ``((…))``, ``$[…]``, ``for ((…))``) is read as bash reads it:
its ``<<`` is a shift, not a here-document (see ``_expansions``).
Single quotes make everything literal; ``$'...'`` is decoded as bash decodes it (a
backslash-quote does not end it); ``$"..."`` is a double-quoted string; a backslash escapes
one character and a backslash-newline is removed (it joins ``a`` and ``b`` into the word
``ab``, and a ``#`` right after it does not start a comment); ``#`` at the start of a word
starts a comment. A here-document's body is data, not commands.

Each :class:`Segment` keeps its text (runs of unquoted whitespace collapsed, leading shell
keywords such as ``if``/``then``/``do``/``function f`` dropped), its words after quote
removal (redirections left out), the command it runs through assignments and wrappers (see
``_words``), whether it redirects output to a file (``>``, ``>>``, ``>|``, ``&>``, ``<>``,
``>&file``; not ``/dev/null`` or a descriptor such as ``2>&1``), and whether it is *opaque*:
it runs code its words do not show (``eval``, ``bash -c``, a shell reading a here-document,
``source``, a command name built by an expansion). Allow rules look at the text and never
allow an opaque segment; deny rules look at every reading (see :attr:`Segment.views`), and
at the code of ``bash -c``, ``eval`` and here-documents fed to a shell, which is split too.

A command that does not parse (an unbalanced quote, parenthesis or backtick, a redirection
without a target, an unterminated here-document, or nesting deeper than 64 levels) comes
back with ``complete=False`` and a best-effort split plus a quote-blind one: allow rules
never match it, deny rules still look at every part.
"""

from __future__ import annotations

import re

from dive.permissions._command import ASSIGNMENT, Command, Unbalanced, build, dropped
from dive.permissions._expansions import MAX_DEPTH, Reader
from dive.permissions._segments import Segment, ShellSplit
from dive.permissions._words import Word

__all__ = ["Segment", "ShellSplit", "split_command"]

_OPERATOR = re.compile(r"&>>?|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>")
_INNER_DEPTH = 8


class _Scanner(Reader):
    """One pass over a command line; backtick bodies get a scanner of their own."""

    def commands(self, closer: str | None) -> None:
        """Scan commands up to ``closer`` (``)``) or the end; raise ``Unbalanced``."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unbalanced
        try:
            self._commands(closer)
        finally:
            self.depth -= 1

    def _commands(self, closer: str | None) -> None:
        text, cmd = self.text, self._new()
        try:
            while self.pos < len(text):
                c = text[self.pos]
                nxt = text[self.pos + 1 : self.pos + 2]
                if c == ")":
                    if closer != ")":
                        raise Unbalanced
                    self.pos += 1
                    self._flush(cmd)
                    return
                if c in " \t":
                    cmd.space()
                    self.pos += 1
                elif c == "\\":
                    if nxt != "\n":  # a backslash-newline is removed, joining the lines
                        cmd.add(c + nxt, nxt or c, quoted=True)
                    self.pos += 2
                elif c == "'":
                    self._single(cmd)
                elif c == "$" and nxt == "'":
                    self._ansi(cmd)
                elif c == "$" and nxt == '"':
                    self.pos += 1
                    cmd.add("$", "", quoted=True)
                    self._double(cmd)
                elif c == '"':
                    self._double(cmd)
                elif c == "`":
                    self._backtick(cmd)
                elif c in "$<>" and nxt == "(":
                    self._substitution(cmd)
                elif c == "$":
                    self._dollar(cmd, in_double=False)
                elif c in "<>" or (c == "&" and nxt == ">"):
                    m = _OPERATOR.match(text, self.pos)
                    assert m is not None
                    cmd.operator(m.group())
                    self.pos = m.end()
                elif c == "#" and cmd.word is None:
                    end = text.find("\n", self.pos)
                    self.pos = len(text) if end < 0 else end
                elif c == "(" and nxt == "(" and cmd.at_start() and self._arithmetic(cmd, "))"):
                    continue  # an arithmetic command: ``((...))``, ``for ((...))``
                elif c in ";\n&|(":
                    self._flush(cmd)
                    upstream, cmd = cmd, self._new()
                    if c == "|" and nxt != "|":
                        cmd.upstream = upstream
                    self.pos += (
                        2 if (c == "&" and nxt == "&") or (c == "|" and nxt in ("|", "&")) else 1
                    )
                    if c == "\n":
                        self.heredoc_bodies()
                    elif c == "(":
                        self.commands(")")
                else:
                    cmd.add(c, c)
                    self.pos += 1
            self._flush(cmd)
            if closer is not None:
                raise Unbalanced
        except Unbalanced:
            if cmd not in self.read:  # keep the part read so far for deny rules
                cmd.finish()
                self.read.append(cmd)
            raise


_EXPANSION = re.compile(r"\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*|\$.?")


def _naive_word(raw: str) -> Word:
    """A word of the quote-blind split: quotes dropped, expansions noticed."""
    value = re.sub(r"[\\'\"]", "", raw)
    literal = not re.search(r"[$`*?]", value)
    return Word(
        value=value,
        assign=ASSIGNMENT.match(raw) is not None,
        literal=literal,
        unexpanded=None if literal else re.sub(r"[\\'\"]", "", _EXPANSION.sub("", raw)),
    )


def _naive(text: str) -> list[tuple[Segment, list[str]]]:
    """A quote-blind split for commands that do not parse (deny rules still see every part)."""
    out: list[tuple[Segment, list[str]]] = []
    joined = text.replace("\\\n", "")  # a backslash-newline, wherever it is
    parts = re.split(
        r"&&|\|\||[;&|\n`()]|\$\(|<<<?-?", text if joined == text else text + "\n" + joined
    )
    for part in parts:
        raw = part.split()
        words = [_naive_word(w) for w in raw]
        n = dropped(words, [True] * len(words))
        if n < len(raw):
            out.append(build(" ".join(raw[n:]), words[n:], False, []))
    return out


def _split(command: str, depth: int) -> tuple[list[Segment], bool]:
    complete = True
    read: list[Command] = []
    try:
        scanner = _Scanner(command, depth)
        read = scanner.read
        scanner.commands(None)
        complete = not scanner.heredocs  # a here-document whose body never came
    except Unbalanced:
        complete = False
    out: list[Segment] = []
    for cmd in read:
        built = cmd.segment()
        if built is None:
            continue
        segment, scripts = built
        out.append(segment)
        for script in scripts:
            inner, ok = _split(script, depth + _INNER_DEPTH)
            out.extend(inner)
            complete = complete and ok
    return out, complete


def split_command(command: str) -> ShellSplit:
    """Split ``command`` into the simple commands a shell would run.

    The code of ``bash -c '...'`` (also ``sh``, ``zsh``, ``dash``, ...), of ``eval``, and of
    a here-document or here-string fed to a shell is split too, and its commands added.

    Args:
        command: the command line.

    Returns:
        The segments in the order they were found (a substitution's commands come before
        the command that contains them), and whether the command parsed.
    """
    segments, complete = _split(command, 0)
    if not complete:
        seen = {s.text for s in segments}
        for segment, scripts in _naive(command):
            if segment.text not in seen:
                seen.add(segment.text)
                segments.append(segment)
            for script in scripts:
                segments.extend(_split(script, _INNER_DEPTH)[0])
    return ShellSplit(segments=tuple(segments), complete=complete)
