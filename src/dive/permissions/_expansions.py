"""Reading quotes and expansions inside a command line, the way bash finds their ends.

:class:`Reader` is the part of the splitter that reads one quoted string or expansion and
adds it to the word being read: single quotes, ``$'...'`` (decoded), double quotes,
``$name``, ``${...}``, ``$(...)``, ``<(...)``, ``>(...)``, backticks, arithmetic
(``$((...))``, ``((...))``, ``$[...]``) and here-document bodies. Commands inside
substitutions become segments of their own (the subclass in ``_shell`` reads them).

Where each one ends follows bash 5:

- inside ``${...}``, single quotes, ``$'...'`` and double quotes are quoting in every context
  (a quoted ``}`` does not end it), a bare ``{`` is not counted, and substitutions in it run;
- ``$((`` is arithmetic when its parentheses close with ``))``; otherwise it is a command
  substitution starting with a subshell (``$((cd x); ls)``), and ``((`` at the start of a
  command likewise. In arithmetic ``<<`` is a shift, never a here-document, quotes group
  text, and substitutions run (even inside single quotes, which arithmetic does not honour).

Arithmetic evaluates the *values* of the variables it names as expressions, and an array
subscript in such a value runs command substitutions (``x='a[$(cmd)]'; echo $((x))``), so an
expansion that evaluates a variable (arithmetic naming one, ``${a[x]}``, ``${s:x}``,
``${!x}``) marks its command as running hidden code (:meth:`Command.mark`).
"""

from __future__ import annotations

import re

from dive.permissions._command import Command, Heredoc, Unbalanced
from dive.permissions._words import ansi_c

__all__ = ["MAX_DEPTH", "Reader"]

MAX_DEPTH = 64
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_NUMBER = re.compile(r"\b(?:0[xX][0-9A-Fa-f]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+)\b")
_NAME_START = re.compile(r"[A-Za-z_$]")
_PARAM_HEAD = re.compile(r"#?([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[([^\]]*)\])?")
_SAFE_INDIRECT = re.compile(r"![A-Za-z_][A-Za-z0-9_]*(?:[*@]|\[[@*]\])")
_SAFE_SUBSCRIPT = re.compile(r"[@*]|-?[0-9]+")


def _evaluates(body: str) -> bool:
    """Whether ``${body}`` evaluates a variable's value as arithmetic (or names one)."""
    if body.startswith("!"):
        return _SAFE_INDIRECT.fullmatch(body) is None
    m = _PARAM_HEAD.match(body)
    if m is None:
        return False
    subscript = m.group(3)
    if subscript is not None and not _SAFE_SUBSCRIPT.fullmatch(subscript.strip()):
        return True
    rest = body[m.end() :]
    return (
        rest.startswith(":")
        and rest[1:2] not in ("-", "=", "?", "+")
        and bool(_NAME_START.search(rest))
    )


class Reader:
    """Reads quotes and expansions from ``text`` at ``pos``; the subclass reads commands."""

    def __init__(self, text: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise Unbalanced
        self.text = text
        self.pos = 0
        self.depth = depth
        self.read: list[Command] = []
        self.heredocs: list[Heredoc] = []

    def commands(self, closer: str | None) -> None:
        """Read commands up to ``closer`` (``)``) or the end (the subclass's loop)."""
        raise NotImplementedError

    def _new(self, owner: Command | None = None) -> Command:
        return Command(self.heredocs, owner)

    def _flush(self, cmd: Command) -> None:
        dangling = cmd.finish()
        self.read.append(cmd)
        if dangling:
            raise Unbalanced

    def _fail(self, cmd: Command) -> None:
        self.pos = len(self.text)
        self._flush(cmd)
        raise Unbalanced

    # --- quotes ---------------------------------------------------------------------------------

    def _single(self, cmd: Command) -> None:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            cmd.add(self.text[self.pos :], self.text[self.pos + 1 :], quoted=True)
            self._fail(cmd)
        cmd.add(self.text[self.pos : end + 1], self.text[self.pos + 1 : end], quoted=True)
        self.pos = end + 1

    def _ansi_end(self, start: int) -> int:
        """The index of the quote closing the ``$'...'`` at ``start`` (backslash escapes)."""
        text, i = self.text, start + 2
        while i < len(text) and text[i] != "'":
            i += 2 if text[i] == "\\" else 1
        return i

    def _ansi(self, cmd: Command) -> None:
        """``$'...'``: with backslash escapes, so a backslash-quote does not end it."""
        text, i = self.text, self._ansi_end(self.pos)
        if i >= len(text):
            cmd.add(text[self.pos :], "", quoted=True)
            self._fail(cmd)
        cmd.add(text[self.pos : i + 1], ansi_c(text[self.pos + 2 : i]), quoted=True)
        self.pos = i + 1

    def _double(self, cmd: Command) -> None:
        """A double-quoted string: literal but for escapes and expansions."""
        text = self.text
        cmd.add('"', "", quoted=True)
        self.pos += 1
        while self.pos < len(text):
            c = text[self.pos]
            nxt = text[self.pos + 1 : self.pos + 2]
            if c == "\\":
                value = "" if nxt == "\n" else nxt if nxt and nxt in '$`"\\' else c + nxt
                cmd.add(c + nxt, value, quoted=True)
                self.pos += 2
            elif c == '"':
                cmd.add(c, "", quoted=True)
                self.pos += 1
                return
            elif c == "`":
                self._backtick(cmd)
            elif c == "$" and nxt == "(":
                self._substitution(cmd)
            elif c == "$":
                self._dollar(cmd, in_double=True)
            else:
                cmd.add(c, c, quoted=True)
                self.pos += 1
        self._fail(cmd)

    # --- parameters -----------------------------------------------------------------------------

    def _dollar(self, cmd: Command, *, in_double: bool) -> None:
        """``$name``, ``$1``, ``${...}``, ``$[...]``, or a literal ``$``."""
        text, start = self.text, self.pos
        nxt = text[start + 1 : start + 2]
        if nxt == "[":
            self._arithmetic(cmd, "]")
            return
        if nxt != "{":
            m = _PARAMETER.match(text, start + 1)  # ``$name``, ``$$``, ``$1``, ``$#``, ...
            raw = "$" + m.group() if m else "$"
            cmd.add(raw, raw, quoted=in_double, literal=m is None)
            self.pos += len(raw)
            return
        self.pos += 2
        scratch = self._new(cmd)
        while self.pos < len(text):
            c = text[self.pos]
            nxt = text[self.pos + 1 : self.pos + 2]
            if c == "\\":
                self.pos += 2
            elif c == "'":
                end = text.find("'", self.pos + 1)
                self.pos = len(text) if end < 0 else end + 1
            elif c == "$" and nxt == "'":
                self.pos = self._ansi_end(self.pos) + 1
            elif c == '"':
                self._double(scratch)
            elif c == "`":
                self._backtick(scratch)
            elif c in "$<>" and nxt == "(":
                self._substitution(scratch)
            elif c == "$":
                self._dollar(scratch, in_double=True)
            elif c == "}":
                self.pos += 1
                if _evaluates(text[start + 2 : self.pos - 1]):
                    cmd.mark()
                cmd.add(text[start : self.pos], text[start : self.pos], literal=False)
                return
            else:
                self.pos += 1
        cmd.add(text[start:], text[start:], literal=False)
        self._fail(cmd)

    # --- substitutions --------------------------------------------------------------------------

    def _substitution(self, cmd: Command) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)`` (its commands become segments); ``$((...))``."""
        start = self.pos
        if self.text.startswith("$((", start) and self._arithmetic(cmd, "))"):
            return
        self.pos += 2
        self.commands(")")
        cmd.add(self.text[start : self.pos], self.text[start : self.pos], literal=False)

    def _backtick(self, cmd: Command) -> None:
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
            raise Unbalanced
        nested = type(self)("".join(inner), self.depth + 1)
        try:
            nested.commands(None)
            if nested.heredocs:
                raise Unbalanced
        finally:
            self.read.extend(nested.read)
        self.pos = i + 1
        cmd.add(text[start : self.pos], text[start : self.pos], literal=False)

    # --- arithmetic -----------------------------------------------------------------------------

    def _arithmetic(self, cmd: Command, closer: str) -> bool:
        """``$((...))`` (``closer`` ``))``), ``$[...]`` (``]``) or, at ``$`` + 1, ``((...))``.

        Reads the expression at ``pos`` (which is at its ``$``, or at the first ``(`` of an
        arithmetic command) and adds it to ``cmd`` as one expansion. Returns False, with
        nothing read, when the parentheses do not close with ``))``: then it is a command
        substitution or a subshell.
        """
        start, read, pending = self.pos, len(self.read), len(self.heredocs)
        opener = 1 if self.text[start] == "$" else 0
        self.pos = start + opener + len(closer)
        body = self._expression(cmd, closer)
        if body is None:
            self.pos = start
            del self.read[read:]
            del self.heredocs[pending:]
            return False
        if _NAME_START.search(_NUMBER.sub("", body)):
            cmd.mark()
        cmd.add(self.text[start : self.pos], self.text[start : self.pos], literal=False)
        return True

    def _expression(self, cmd: Command, closer: str) -> str | None:
        """The text of an arithmetic expression, ``pos`` after its closer (or None).

        Nested quotes and substitutions are kept as written in the text (their names,
        quotes and ``$`` make it evaluate something, as they do in bash).
        """
        text, parts, depth = self.text, list[str](), 0
        scratch = self._new(cmd)
        opener = "(" if closer == "))" else "["
        while self.pos < len(text):
            c = text[self.pos]
            nxt = text[self.pos + 1 : self.pos + 2]
            start = self.pos
            if c == "\\":
                self.pos += 2
            elif c == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    raise Unbalanced
                cmd.mark(text[self.pos + 1 : end])  # not quoting: its substitutions run
                self.pos = end + 1
            elif c == "$" and nxt == "'":
                end = self._ansi_end(self.pos)
                if end >= len(text):
                    raise Unbalanced
                cmd.mark(ansi_c(text[self.pos + 2 : end]))
                self.pos = end + 1
            elif c == '"':
                self._double(scratch)
            elif c == "`":
                self._backtick(scratch)
            elif c == "$" and nxt == "(":
                self._substitution(scratch)
            elif c == "$":
                self._dollar(scratch, in_double=True)
            elif c == "#" and not (parts and parts[-1][-1:].isalnum()):
                raise Unbalanced  # a comment where bash reads one; never read as arithmetic
            elif c == opener:
                depth += 1
                self.pos += 1
            elif c == closer[0] and depth:
                depth -= 1
                self.pos += 1
            elif c == closer[0]:
                if closer == "))" and nxt != ")":
                    return None
                self.pos += len(closer)
                return "".join(parts)
            else:
                self.pos += 1
            parts.append(text[start : self.pos])
        raise Unbalanced

    # --- here-documents -------------------------------------------------------------------------

    def heredoc_bodies(self) -> None:
        """After a newline: the bodies of the here-documents its line opened, in order."""
        pending = list(self.heredocs)
        self.heredocs.clear()
        for doc in pending:
            doc.command.stdin.append(self._heredoc(doc))

    def _heredoc(self, doc: Heredoc) -> str:
        """One body, up to its delimiter line; an unquoted one still runs substitutions."""
        text, lines = self.text, list[str]()
        scratch = self._new(doc.command)
        while self.pos < len(text):
            end = text.find("\n", self.pos)
            line = text[self.pos : len(text) if end < 0 else end]
            if (line.lstrip("\t") if doc.strip else line) == doc.delimiter:
                self.pos = len(text) if end < 0 else end + 1
                return "\n".join(lines)
            start = self.pos
            while not doc.quoted and self.pos < len(text) and text[self.pos] != "\n":
                c, nxt = text[self.pos], text[self.pos + 1 : self.pos + 2]
                if c == "\\":
                    self.pos += 2
                elif c == "`":
                    self._backtick(scratch)
                elif c == "$" and nxt == "(":
                    self._substitution(scratch)
                elif c == "$":
                    self._dollar(scratch, in_double=True)
                else:
                    self.pos += 1
            if doc.quoted:
                self.pos = len(text) if end < 0 else end
            body = text[start : self.pos]
            lines.append(body.lstrip("\t") if doc.strip else body)
            self.pos += 1
        raise Unbalanced
