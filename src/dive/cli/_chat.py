"""``dive chat``: the interactive loop.

Start-up prints one header line (session, model, workspace) — and, offline, the one-line
notice on stderr — then resumes the session's suspended turn if it has one. Each line read
is a slash command (``dive.cli._slash``) or a message sent as a turn. Ctrl-C at the prompt
clears the line; during a turn it soft-cancels, then hard-cancels; Ctrl-D or ``/quit`` leaves
with exit status 0.
"""

from __future__ import annotations

import sys

from rich.text import Text

from dive.cli._chatstate import Chat
from dive.cli._console import make_console
from dive.cli._dialogs import TerminalDialog
from dive.cli._errors import say
from dive.cli._input import LineReader
from dive.cli._interrupts import Interrupts
from dive.cli._pick import pick_session
from dive.cli._render import Renderer
from dive.cli._runtime import open_runtime
from dive.cli._settings import CliSettings
from dive.cli._slash import run_slash

__all__ = ["run_chat"]

_NOTES = {
    "soft": "stopping after the current step (Ctrl-C again stops now)",
    "hard": "stopping now",
}


async def run_chat(
    settings: CliSettings,
    *,
    session: str | None = None,
    continue_last: bool = False,
    resume: str | None = None,
) -> int:
    """Chat until ``/quit`` or Ctrl-D; returns the exit status (0).

    Args:
        settings: the merged settings.
        session: ``--session ID`` (created when missing).
        continue_last: ``--continue`` (the most recent session).
        resume: ``--resume ID`` (must exist).
    """
    console = make_console()
    renderer = Renderer(console)
    reader = LineReader(settings.db.parent / "chat_history")
    dialog = TerminalDialog(reader, renderer, console)

    def notify(kind: str) -> None:
        renderer.pause()
        console.print(Text(_NOTES[kind], style="yellow"))

    interrupts = Interrupts(notify)
    async with open_runtime(settings, dialog=dialog) as rt:
        if rt.choice.notice:
            say(rt.choice.notice)
        picked = await pick_session(
            rt.store,
            session=session,
            continue_last=continue_last,
            resume=resume,
            db=str(settings.db),
        )
        chat = Chat(
            runtime=rt,
            console=console,
            renderer=renderer,
            reader=reader,
            dialog=dialog,
            interrupts=interrupts,
            session=picked.session,
        )
        state = "new" if picked.new else "resumed"
        console.print(
            Text(
                f"dive · session {picked.session.id} ({state}) · {rt.choice.label} · "
                f"{settings.workspace} · /help",
                style="dim",
            )
        )
        interrupts.install()
        try:
            if not picked.new:
                await chat.switch(picked.session)
            await _loop(chat)
        finally:
            interrupts.uninstall()
    return 0


async def _loop(chat: Chat) -> None:
    while True:
        try:
            line = await chat.reader.read()
        except KeyboardInterrupt:
            chat.console.print(Text("(Ctrl-D or /quit leaves)", style="dim"))
            continue
        except EOFError:
            break
        if not line.strip():
            continue
        if line.lstrip().startswith("/"):
            if await run_slash(chat, line.strip()):
                break
            continue
        await chat.send(line)
    sys.stdout.flush()
