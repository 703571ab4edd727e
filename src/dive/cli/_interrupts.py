"""Ctrl-C while a turn runs: the first press soft-cancels, the second hard-cancels.

A soft cancel lets running tool calls finish and stops at the next step boundary (the turn
ends ``incomplete (canceled)`` with nothing of unknown outcome); a hard cancel stops at once.
At the prompt the terminal is in raw mode, so Ctrl-C reaches prompt-toolkit as a key (it
clears the line) and never this handler.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Generator
from contextlib import contextmanager

from dive.turns import CancelToken

__all__ = ["Interrupts"]


class Interrupts:
    """SIGINT routed to the running turn's :class:`~dive.turns.CancelToken`.

    Args:
        notify: called with ``"soft"`` or ``"hard"`` when a press cancels.
    """

    def __init__(self, notify: Callable[[str], None]) -> None:
        self._notify = notify
        self._token: CancelToken | None = None
        self._presses = 0
        self._installed = False

    def install(self) -> None:
        """Take SIGINT for the running loop (no-op where signals cannot be handled)."""
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.press)
            self._installed = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def uninstall(self) -> None:
        """Give SIGINT back."""
        if self._installed:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
            self._installed = False

    @contextmanager
    def armed(self, token: CancelToken) -> Generator[CancelToken]:
        """Presses cancel ``token`` inside the ``with`` block."""
        self._token, self._presses = token, 0
        try:
            yield token
        finally:
            self._token = None

    def press(self) -> None:
        """One Ctrl-C: soft cancel, then hard cancel (ignored with no turn running)."""
        token = self._token
        if token is None:
            return
        self._presses += 1
        if self._presses == 1:
            token.soft_cancel("soft-canceled with Ctrl-C")
            self._notify("soft")
        else:
            token.cancel("canceled with Ctrl-C")
            self._notify("hard")
