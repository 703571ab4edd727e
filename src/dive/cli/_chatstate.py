"""One chat: the runtime, the terminal pieces, the current session, and sending a turn.

:meth:`Chat.send` runs one invocation with the renderer as the event handler and Ctrl-C
armed on a fresh :class:`~dive.turns.CancelToken`; when the turn suspends (an ``AskUser``
question, an approval held at the gate, an MCP elicitation), the person answers in place and
the turn resumes, until it completes, ends incomplete, or an answer is interrupted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.text import Text

from dive.agent import RunResult
from dive.cli._dialogs import TerminalDialog
from dive.cli._input import LineReader
from dive.cli._interrupts import Interrupts
from dive.cli._render import Renderer
from dive.cli._runtime import Runtime
from dive.cli._transcript import print_transcript
from dive.permissions import ARGUMENT_KEY
from dive.sessions import Session
from dive.turns import CancelToken

__all__ = ["Chat"]


@dataclass(slots=True, kw_only=True)
class Chat:
    """The state of one ``dive chat``.

    Attributes:
        runtime: the agent, store and settings.
        console: where everything is printed.
        renderer: renders running turns.
        reader: reads messages and answers.
        dialog: asks permission and answers suspended calls.
        interrupts: Ctrl-C → the running turn's cancel token.
        session: the session turns go to.
        turns: invocations sent in this process.
    """

    runtime: Runtime
    console: Console
    renderer: Renderer
    reader: LineReader
    dialog: TerminalDialog
    interrupts: Interrupts
    session: Session
    turns: int = 0

    def __post_init__(self) -> None:
        for tool in self.runtime.agent.tools:
            argument = tool.definition.metadata.get(ARGUMENT_KEY)
            if isinstance(argument, str):
                self.renderer.argument_of(tool.name, argument)

    async def send(
        self, text: str | None = None, *, tool_results: dict[str, Any] | None = None
    ) -> RunResult[str]:
        """Run a turn (or resume one); answer its suspensions in place."""
        while True:
            result = await self._invoke(text, tool_results)
            self.renderer.ended(result)
            suspension = result.turn.suspension
            if result.status != "suspended" or suspension is None:
                return result
            answers = await self.dialog.answer(suspension.pending_tool_calls)
            if answers is None:
                return result
            text, tool_results = None, answers

    async def _invoke(
        self, text: str | None, tool_results: dict[str, Any] | None
    ) -> RunResult[str]:
        self.turns += 1
        with self.interrupts.armed(CancelToken()) as token:
            self.renderer.busy()
            try:
                return await self.runtime.agent.run(
                    text,
                    session=self.session,
                    tool_results=tool_results,
                    on_event=self.renderer.on_event,
                    cancel=token,
                )
            finally:
                self.renderer.pause()

    async def settle(self) -> None:
        """Answer the session's suspended turn, if it has one (on resume)."""
        snapshot = await self.session.load()
        turn = snapshot.open_turn
        if turn is None or turn.status != "suspended" or turn.suspension is None:
            return
        pending = turn.suspension.pending_tool_calls
        count = len(pending)
        self.console.print(
            Text(f"this session's last turn is waiting for {count} answer(s)", style="yellow")
        )
        answers = await self.dialog.answer(pending)
        if answers is not None:
            await self.send(tool_results=answers)

    async def switch(self, session: Session, *, show: int = 3) -> None:
        """Continue in ``session``: show its last turns, answer what it waits for."""
        self.session = session
        turns = await session.turns()
        if turns:
            self.console.print(Text(f"session {session.id}: {len(turns)} turn(s)", style="dim"))
            print_transcript(self.console, turns, last=show)
        await self.settle()
