"""Shell-aware splitting of a command into the simple commands it runs.

``split_command`` walks the text once, honouring quotes the way bash does, and cuts it into
the commands a shell would run: at ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&``, newlines,
subshell parentheses and ``{ ...; }`` groups (function bodies included), and it lifts out the
commands of ``$( )``, ``<( )``, ``>( )``, backticks and ``${...}`` (nested to any depth,
inside double quotes and unquoted here-documents too, where bash still expands them).
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
from dataclasses import dataclass

from dive.permissions._segments import Segment, ShellSplit
from dive.permissions._words import Word, ansi_c, opaque_scripts, primary, readings

__all__ = ["Segment", "ShellSplit", "split_command"]

_KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "while", "until", "do", "!", "{", "}", "time", "fi", "done"}
    | {"esac"}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_OPERATOR = re.compile(r"&>>?|<<<|<<-|<<|<>|<&|>&|>>|>\||<|>")
_FD = re.compile(r"\d+-?|-")
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_GLOB = re.compile(r"[*?]|\[.*\]|\{.*(,|\.\.).*\}")
_MAX_DEPTH = 64
_INNER_DEPTH = 8


class _Unbalanced(Exception):
    """The command has an unbalanced quote, parenthesis or backtick (or nests too deep)."""


def _dropped(words: list[Word], plain: list[bool]) -> int:
    """How many leading words are shell keywords (``function f`` and ``time -p`` included)."""
    i = 0
    while i < len(words) and plain[i]:
        value = words[i].value
        time_p = value == "time" and i + 1 < len(words) and words[i + 1].value == "-p"
        if (value == "function" or (time_p and plain[i + 1])) and i + 1 < len(words):
            i += 2
        elif value in _KEYWORDS:
            i += 1
        else:
            break
    return i


def _build(
    text: str, words: list[Word], writes: bool, stdin: list[str]
) -> tuple[Segment, list[str]]:
    """The segment of one command, and the scripts it runs that deny rules should see."""
    scripts: list[str] = []
    found, truncated = readings(words, scripts)
    opaque = truncated or bool(scripts)  # too many readings to look at; ``env -S '...'``
    for reading in found:
        hidden, code = opaque_scripts(reading, stdin)
        opaque = opaque or hidden
        scripts.extend(code)
    bare = " ".join(w.value for w in primary(words)) or text
    views = [text]
    for view in (" ".join(w.value for w in r) for r in found):
        if view and view not in views:
            views.append(view)
    return (
        Segment(
            text=text,
            bare=bare,
            writes=writes,
            words=tuple(w.value for w in words),
            views=tuple(views),
            opaque=opaque,
        ),
        scripts,
    )


class _WordBuf:
    """A word being read: its raw text, its value after quote removal, what it holds."""

    __slots__ = ("kept", "literal", "quoted", "raw", "unquoted", "value")

    def __init__(self) -> None:
        self.raw: list[str] = []
        self.value: list[str] = []
        self.kept: list[str] = []  # the value without its expansions
        self.unquoted: list[str] = []
        self.quoted = False
        self.literal = True


@dataclass(slots=True)
class _Heredoc:
    delimiter: str
    quoted: bool
    strip: bool
    command: _Command


class _Command:
    """One simple command being read."""

    def __init__(self, heredocs: list[_Heredoc]) -> None:
        self.heredocs = heredocs  # the scanner's pending here-documents
        self.buf: list[str] = []  # raw text, unquoted blank runs collapsed to one space
        self.blanks: set[int] = set()  # the chunks of ``buf`` that are such a space
        self.words: list[Word] = []
        self.plain: list[bool] = []  # the word has no quoting, escapes or expansions
        self.spans: list[tuple[int, int]] = []  # each word's chunks in ``buf``
        self.word: _WordBuf | None = None
        self.start = 0
        self.redirect: str | None = None
        self.writes = False
        self.stdin: list[str] = []  # here-document bodies and here-strings
        self.upstream: _Command | None = None  # the command piped into this one

    def feed(self) -> list[str]:
        """What this command reads on its input that may be code.

        Its here-documents and here-strings, those of the command piped into it, and the
        words that one prints when it is ``echo`` or ``printf``.
        """
        fed = list(self.stdin)
        up = self.upstream
        if up is not None:
            fed.extend(up.stdin)
            n = _dropped(up.words, up.plain)
            shown = [w.value for w in up.words[n:]]
            if shown and shown[0] in ("echo", "printf"):
                fed.append(" ".join(w for w in shown[1:] if not w.startswith("-")))
        return fed

    def add(self, raw: str, value: str, *, quoted: bool = False, literal: bool = True) -> None:
        """Append text to the current word (starting one)."""
        if self.word is None:
            self.word = _WordBuf()
            self.start = len(self.buf)
        w = self.word
        self.buf.append(raw)
        w.raw.append(raw)
        w.value.append(value)
        if literal:
            w.kept.append(value)
        w.quoted = w.quoted or quoted
        w.literal = w.literal and literal
        if not quoted and literal:
            w.unquoted.append(value)

    def space(self) -> None:
        self.end_word()
        if self.buf and len(self.buf) - 1 not in self.blanks:
            self.blanks.add(len(self.buf))
            self.buf.append(" ")

    def operator(self, op: str) -> None:
        """A redirection operator; a digits-only word just before it is its descriptor."""
        w = self.word
        if w is not None and self.redirect is None and not w.quoted and "".join(w.raw).isdigit():
            self.word = None
        else:
            self.end_word()
        if self.redirect is not None:
            raise _Unbalanced
        self.buf.append(op)
        self.redirect = op

    def end_word(self) -> None:
        w = self.word
        if w is None:
            return
        self.word = None
        raw, value = "".join(w.raw), "".join(w.value)
        op, self.redirect = self.redirect, None
        if op is None:
            literal = w.literal and not _GLOB.search("".join(w.unquoted))
            assign = _ASSIGNMENT.match(raw) is not None
            unexpanded = None if w.literal else "".join(w.kept)
            self.words.append(
                Word(value=value, assign=assign, literal=literal, unexpanded=unexpanded)
            )
            self.plain.append(raw == value and literal)
            self.spans.append((self.start, len(self.buf)))
        elif op in ("<<", "<<-"):
            self.heredocs.append(
                _Heredoc(delimiter=value, quoted=w.quoted, strip=op == "<<-", command=self)
            )
        elif op == "<<<":
            self.stdin.append(value)
        elif op == ">&":
            self.writes = self.writes or not (w.literal and _FD.fullmatch(value))
        elif op in _WRITES:
            self.writes = self.writes or not (w.literal and value == "/dev/null")

    def finish(self) -> bool:
        """End the last word; True when a redirection has no target."""
        self.end_word()
        return self.redirect is not None

    def segment(self) -> tuple[Segment, list[str]] | None:
        n = _dropped(self.words, self.plain)
        gone = {i for a, b in self.spans[:n] for i in range(a, b)}
        kept: list[str] = []
        for i, chunk in enumerate(self.buf):
            if i in gone or (i in self.blanks and (not kept or kept[-1] == " ")):
                continue
            kept.append(chunk)
        text = "".join(kept).strip()
        if not text:
            return None
        return _build(text, self.words[n:], self.writes, self.feed())


class _Scanner:
    """One pass over a command line; backtick bodies get a scanner of their own."""

    def __init__(self, text: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise _Unbalanced
        self.text = text
        self.pos = 0
        self.depth = depth
        self.read: list[_Command] = []
        self.heredocs: list[_Heredoc] = []

    def _new(self) -> _Command:
        return _Command(self.heredocs)

    def _flush(self, cmd: _Command) -> None:
        dangling = cmd.finish()
        self.read.append(cmd)
        if dangling:
            raise _Unbalanced

    def _fail(self, cmd: _Command) -> None:
        self.pos = len(self.text)
        self._flush(cmd)
        raise _Unbalanced

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
        text, cmd = self.text, self._new()
        try:
            while self.pos < len(text):
                c = text[self.pos]
                nxt = text[self.pos + 1 : self.pos + 2]
                if c == ")":
                    if closer != ")":
                        raise _Unbalanced
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
                elif c in ";\n&|(":
                    self._flush(cmd)
                    upstream, cmd = cmd, self._new()
                    if c == "|" and nxt != "|":
                        cmd.upstream = upstream
                    self.pos += (
                        2 if (c == "&" and nxt == "&") or (c == "|" and nxt in ("|", "&")) else 1
                    )
                    if c == "\n":
                        self._heredoc_bodies()
                    elif c == "(":
                        self.commands(")")
                else:
                    cmd.add(c, c)
                    self.pos += 1
            self._flush(cmd)
            if closer is not None:
                raise _Unbalanced
        except _Unbalanced:
            if cmd not in self.read:  # keep the part read so far for deny rules
                cmd.finish()
                self.read.append(cmd)
            raise

    def _single(self, cmd: _Command) -> None:
        end = self.text.find("'", self.pos + 1)
        if end < 0:
            cmd.add(self.text[self.pos :], self.text[self.pos + 1 :], quoted=True)
            self._fail(cmd)
        cmd.add(self.text[self.pos : end + 1], self.text[self.pos + 1 : end], quoted=True)
        self.pos = end + 1

    def _ansi(self, cmd: _Command) -> None:
        """``$'...'``: with backslash escapes, so a backslash-quote does not end it."""
        text, i = self.text, self.pos + 2
        while i < len(text) and text[i] != "'":
            i += 2 if text[i] == "\\" else 1
        if i >= len(text):
            cmd.add(text[self.pos :], "", quoted=True)
            self._fail(cmd)
        cmd.add(text[self.pos : i + 1], ansi_c(text[self.pos + 2 : i]), quoted=True)
        self.pos = i + 1

    def _double(self, cmd: _Command) -> None:
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

    def _dollar(self, cmd: _Command, *, in_double: bool) -> None:
        """``$name``, ``$1``, ``${...}`` (its substitutions lifted out), or a literal ``$``."""
        text, start = self.text, self.pos
        nxt = text[start + 1 : start + 2]
        if nxt != "{":
            m = _PARAMETER.match(text, start + 1)  # ``$name``, ``$$``, ``$1``, ``$#``, ...
            raw = "$" + m.group() if m else "$"
            cmd.add(raw, raw, quoted=in_double, literal=m is None)
            self.pos += len(raw)
            return
        self.pos += 2
        depth = 1
        scratch = self._new()
        while self.pos < len(text):
            c = text[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == "'" and not in_double:
                end = text.find("'", self.pos + 1)
                self.pos = len(text) if end < 0 else end + 1
            elif c == "`":
                self._backtick(scratch)
            elif c in "$<>" and text[self.pos + 1 : self.pos + 2] == "(":
                self._substitution(scratch)
            elif c in "{}":
                depth += 1 if c == "{" else -1
                self.pos += 1
                if depth == 0:
                    cmd.add(text[start : self.pos], text[start : self.pos], literal=False)
                    return
            else:
                self.pos += 1
        cmd.add(text[start:], text[start:], literal=False)
        self._fail(cmd)

    def _substitution(self, cmd: _Command) -> None:
        """``$(...)``, ``<(...)`` or ``>(...)``: its commands become segments of their own."""
        start = self.pos
        self.pos += 2
        self.commands(")")
        cmd.add(self.text[start : self.pos], self.text[start : self.pos], literal=False)

    def _backtick(self, cmd: _Command) -> None:
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
            if nested.heredocs:
                raise _Unbalanced
        finally:
            self.read.extend(nested.read)
        self.pos = i + 1
        cmd.add(text[start : self.pos], text[start : self.pos], literal=False)

    def _heredoc_bodies(self) -> None:
        """After a newline: the bodies of the here-documents its line opened, in order."""
        pending = list(self.heredocs)
        self.heredocs.clear()
        for doc in pending:
            doc.command.stdin.append(self._heredoc(doc))

    def _heredoc(self, doc: _Heredoc) -> str:
        """One body, up to its delimiter line; an unquoted one still runs substitutions."""
        text, lines = self.text, list[str]()
        scratch = self._new()
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
        raise _Unbalanced


_EXPANSION = re.compile(r"\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*|\$.?")


def _naive_word(raw: str) -> Word:
    """A word of the quote-blind split: quotes dropped, expansions noticed."""
    value = re.sub(r"[\\'\"]", "", raw)
    literal = not re.search(r"[$`*?]", value)
    return Word(
        value=value,
        assign=_ASSIGNMENT.match(raw) is not None,
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
        n = _dropped(words, [True] * len(words))
        if n < len(raw):
            out.append(_build(" ".join(raw[n:]), words[n:], False, []))
    return out


def _split(command: str, depth: int) -> tuple[list[Segment], bool]:
    complete = True
    read: list[_Command] = []
    try:
        scanner = _Scanner(command, depth)
        read = scanner.read
        scanner.commands(None)
        complete = not scanner.heredocs  # a here-document whose body never came
    except _Unbalanced:
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
