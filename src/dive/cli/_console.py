"""The rich consoles the command line prints with.

Colour follows the terminal: none under ``TERM=dumb``, when ``NO_COLOR`` is set, or when the
output is not a terminal (rich decides). Live regions (the spinner, streamed Markdown) are
only used on an interactive terminal.
"""

from __future__ import annotations

from rich.console import Console

__all__ = ["is_live", "make_console"]


def make_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr), without automatic highlighting."""
    return Console(stderr=stderr, highlight=False)


def is_live(console: Console) -> bool:
    """Whether the console may redraw (an interactive, non-dumb terminal)."""
    return console.is_terminal and console.is_interactive and not console.is_dumb_terminal
