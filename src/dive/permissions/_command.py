"""One simple command while the splitter reads it, and the :class:`Segment` made of it.

A :class:`Command` collects the raw text of one simple command (unquoted blank runs
collapsed), its words after quote removal, its redirections (a write to a file, here-documents
and here-strings), and what the splitter learnt about it along the way: whether an expansion in
it runs code its words do not show (``hidden``: arithmetic or a subscript that evaluates a
variable's value) and text that may be code deny rules should split too (``codes``).
:meth:`Command.segment` drops leading shell keywords (``if``, ``then``, ``do``, ``time -p``,
``function f``, ``coproc NAME``) and builds the segment with every reading of its words (see
``_words``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from dive.permissions._opaque import opaque_scripts
from dive.permissions._segments import Segment
from dive.permissions._words import Word, primary, readings

__all__ = ["ASSIGNMENT", "KEYWORDS", "Command", "Heredoc", "Unbalanced", "build", "dropped"]

KEYWORDS = frozenset(
    {"if", "then", "else", "elif", "while", "until", "do", "!", "{", "}", "time", "fi", "done"}
    | {"esac", "coproc"}
)
_COMPOUND = frozenset({"{", "while", "until", "if", "for", "case", "select", "[["})
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_FD = re.compile(r"\d+-?|-")
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_GLOB = re.compile(r"[*?]|\[.*\]|\{.*(,|\.\.).*\}")


class Unbalanced(Exception):
    """The command has an unbalanced quote, parenthesis or backtick (or nests too deep)."""


def dropped(words: list[Word], plain: list[bool]) -> int:
    """How many leading words are shell keywords (``function f``, ``time -p``, ``coproc N``)."""
    i = 0
    while i < len(words) and plain[i]:
        value = words[i].value
        time_p = value == "time" and i + 1 < len(words) and words[i + 1].value == "-p"
        named_coproc = (
            value == "coproc"
            and i + 2 < len(words)
            and plain[i + 1]
            and words[i + 2].value in _COMPOUND
        )
        if (value == "function" or (time_p and plain[i + 1]) or named_coproc) and i + 1 < len(
            words
        ):
            i += 2
        elif value in KEYWORDS:
            i += 1
        else:
            break
    return i


def build(
    text: str,
    words: list[Word],
    writes: bool,
    stdin: list[str],
    *,
    hidden: bool = False,
    codes: tuple[str, ...] = (),
) -> tuple[Segment, list[str]]:
    """The segment of one command, and the scripts it runs that deny rules should see."""
    scripts: list[str] = list(codes)
    found, truncated = readings(words, scripts)
    opaque = hidden or truncated or len(scripts) > len(codes)  # ``env -S '...'``
    for reading in found:
        seen, code = opaque_scripts(reading.words, stdin)
        opaque = opaque or seen
        scripts.extend(code)
    bare = " ".join(w.value for w in primary(words)) or text
    views = [text]
    runs: list[str] = []
    for reading in found:
        view = " ".join(w.value for w in reading.words)
        if view and view not in views:
            views.append(view)
        if view and reading.wrapped and view not in runs:
            runs.append(view)
    return (
        Segment(
            text=text,
            bare=bare,
            writes=writes,
            words=tuple(w.value for w in words),
            views=tuple(views),
            opaque=opaque,
            runs=tuple(runs),
        ),
        scripts,
    )


class WordBuf:
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
class Heredoc:
    delimiter: str
    quoted: bool
    strip: bool
    command: Command


class Command:
    """One simple command being read."""

    def __init__(self, heredocs: list[Heredoc], owner: Command | None = None) -> None:
        self.heredocs = heredocs  # the scanner's pending here-documents
        self.owner = owner  # a scratch command (inside ``${...}``) marks its owner
        self.buf: list[str] = []  # raw text, unquoted blank runs collapsed to one space
        self.blanks: set[int] = set()  # the chunks of ``buf`` that are such a space
        self.words: list[Word] = []
        self.plain: list[bool] = []  # the word has no quoting, escapes or expansions
        self.spans: list[tuple[int, int]] = []  # each word's chunks in ``buf``
        self.word: WordBuf | None = None
        self.start = 0
        self.redirect: str | None = None
        self.writes = False
        self.hidden = False  # an expansion evaluates a variable's value as code
        self.codes: list[str] = []  # text that may be code (split for deny rules)
        self.stdin: list[str] = []  # here-document bodies and here-strings
        self.upstream: Command | None = None  # the command piped into this one

    def mark(self, code: str | None = None) -> None:
        """An expansion in this command runs code its words do not show (``code``, if seen)."""
        cmd = self
        while cmd.owner is not None:
            cmd = cmd.owner
        cmd.hidden = True
        if code:
            cmd.codes.append(code)

    def at_start(self) -> bool:
        """No word yet but shell keywords (or ``for``): where ``((`` starts arithmetic."""
        if self.word is not None or self.redirect is not None:
            return False
        n = dropped(self.words, self.plain)
        rest = [w.value for w in self.words[n:]]
        return not rest or (rest == ["for"] and self.plain[n])

    def feed(self) -> list[str]:
        """What this command reads on its input that may be code.

        Its here-documents and here-strings, those of the command piped into it, and the
        words that one prints when it is ``echo`` or ``printf``.
        """
        fed = list(self.stdin)
        up = self.upstream
        if up is not None:
            fed.extend(up.stdin)
            n = dropped(up.words, up.plain)
            shown = [w.value for w in up.words[n:]]
            if shown and shown[0] in ("echo", "printf"):
                fed.append(" ".join(w for w in shown[1:] if not w.startswith("-")))
        return fed

    def add(self, raw: str, value: str, *, quoted: bool = False, literal: bool = True) -> None:
        """Append text to the current word (starting one)."""
        if self.word is None:
            self.word = WordBuf()
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
            raise Unbalanced
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
            assign = ASSIGNMENT.match(raw) is not None
            unexpanded = None if w.literal else "".join(w.kept)
            self.words.append(
                Word(value=value, assign=assign, literal=literal, unexpanded=unexpanded)
            )
            self.plain.append(raw == value and literal)
            self.spans.append((self.start, len(self.buf)))
        elif op in ("<<", "<<-"):
            self.heredocs.append(
                Heredoc(delimiter=value, quoted=w.quoted, strip=op == "<<-", command=self)
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
        n = dropped(self.words, self.plain)
        gone = {i for a, b in self.spans[:n] for i in range(a, b)}
        kept: list[str] = []
        for i, chunk in enumerate(self.buf):
            if i in gone or (i in self.blanks and (not kept or kept[-1] == " ")):
                continue
            kept.append(chunk)
        text = "".join(kept).strip()
        if not text:
            return None
        return build(
            text,
            self.words[n:],
            self.writes,
            self.feed(),
            hidden=self.hidden,
            codes=tuple(self.codes),
        )
