r"""Reading the chat's input: prompt-toolkit on a terminal, plain lines otherwise.

On a terminal, input has history (kept in ``~/.dive/chat_history``, searchable with Ctrl-R)
and several lines: Enter sends, Esc then Enter (or Alt-Enter) starts a new line, and so does
Enter after a trailing ``\``. Ctrl-C clears the line (``KeyboardInterrupt``), Ctrl-D on an
empty line quits (``EOFError``). Under ``TERM=dumb`` prompt-toolkit falls back to its plain
line editor, still with a prompt. When stdin is not a terminal, lines are read as they come
and the prompt is still printed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

__all__ = ["LineReader"]


def _bindings() -> Any:
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:  # pyright: ignore[reportUnusedFunction]
        event.current_buffer.insert_text("\n")

    @kb.add("enter")
    def _enter(event: KeyPressEvent) -> None:  # pyright: ignore[reportUnusedFunction]
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    return kb


class LineReader:
    """Reads messages and answers from the person at the terminal.

    Args:
        history: the history file (None: history in memory only).
        interactive: use prompt-toolkit (default: when stdin and stdout are terminals).
    """

    def __init__(self, history: Path | None = None, *, interactive: bool | None = None) -> None:
        if interactive is None:
            interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self.interactive = interactive
        self._main: Any = None
        self._plain: Any = None
        if interactive:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import FileHistory, InMemoryHistory

            kept: Any = InMemoryHistory()
            if history is not None:
                try:
                    history.parent.mkdir(parents=True, exist_ok=True)
                    kept = FileHistory(str(history))
                except OSError:
                    pass
            self._main = PromptSession(
                history=kept,
                key_bindings=_bindings(),
                prompt_continuation="… ",
                enable_history_search=True,
            )
            self._plain = PromptSession()

    async def read(self, prompt: str = "› ") -> str:
        """The next message (``EOFError`` at the end, ``KeyboardInterrupt`` on Ctrl-C)."""
        if self._main is None:
            return await _plain_line(prompt)
        text: str = await self._main.prompt_async(prompt, handle_sigint=False)
        return text

    async def ask(self, prompt: str) -> str:
        """A one-line answer, without history."""
        if self._plain is None:
            return await _plain_line(prompt)
        text: str = await self._plain.prompt_async(prompt, handle_sigint=False)
        return text


async def _plain_line(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = await asyncio.to_thread(sys.stdin.readline)
    if not line:
        sys.stdout.write("\n")
        raise EOFError
    return line.rstrip("\n")
