"""``Segment`` and ``ShellSplit``: what ``split_command`` makes of a command line."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Segment", "ShellSplit"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """One simple command of a shell command line.

    Attributes:
        text: the command as written, unquoted whitespace collapsed, leading shell keywords
            dropped (what allow rules match).
        bare: the command it runs: quote-removed words without leading ``NAME=value``
            assignments and wrappers (``sudo -u root``, ``env -i``, ``xargs``, ...).
        writes: it redirects output to a file.
        words: its words after quote removal, redirections left out.
        views: every reading deny and ask rules try: the text, the words, and the command
            behind each assignment and wrapper (and ``find -exec``).
        opaque: it runs code its words do not show (``eval``, ``bash -c``, ``source``, a
            shell reading its input, ``$CMD``); no allow rule with a specifier matches it.
        runs: the commands it runs through wrappers, leading assignments and
            ``find -exec`` (``env rm x`` runs ``rm x``); an allow rule for the segment allows
            it only when each of these is allowed too.
    """

    text: str
    bare: str
    writes: bool = False
    words: tuple[str, ...] = ()
    views: tuple[str, ...] = ()
    opaque: bool = False
    runs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellSplit:
    """The simple commands of a command line; ``complete`` is False when it did not parse.

    Attributes:
        segments: the simple commands, in order.
        complete: the command line parsed completely.
    """

    segments: tuple[Segment, ...]
    complete: bool
