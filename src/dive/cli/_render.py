"""The chat's view of a running turn: streamed Markdown, tool lines, a spinner, thinking.

On an interactive terminal one rich ``Live`` region at the bottom shows, in turn, a spinner
(while the model or a tool works) or the part of the answer still being written; finished
paragraphs are printed above it as Markdown, so the region stays small. Thinking streams
dimmed. Anywhere else (``TERM=dumb``, a pipe) text is written as it arrives, plain, with no
redraws. :meth:`Renderer.pause` clears the region before a prompt.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from dive.agent import (
    AgentEvent,
    MessageEvent,
    ModelStreamEvent,
    RunResult,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.cli._console import is_live
from dive.cli._transcript import result_text, tool_line
from dive.llm import (
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    TextDelta,
    ThinkingDelta,
)
from dive.tools import ToolProgressEvent

__all__ = ["Renderer", "split_done"]

_THINKING = "dim italic"


def split_done(text: str) -> tuple[str, str]:
    """``text`` cut after its last finished paragraph outside a code fence: (done, rest)."""
    at = len(text)
    while True:
        at = text.rfind("\n\n", 0, at)
        if at < 0:
            return "", text
        if text[:at].count("```") % 2 == 0:
            return text[:at], text[at + 2 :]


class Renderer:
    """Renders the events of a turn on ``console``.

    Args:
        console: where to print.
        live: redraw a region (spinner, streamed text); default: when the console is an
            interactive, non-dumb terminal.
    """

    def __init__(self, console: Console, *, live: bool | None = None) -> None:
        self.console = console
        self.live = is_live(console) if live is None else live
        self._region: Live | None = None
        self._kind: str | None = None  # "text" or "thinking" while a block streams
        self._buffer = ""
        self._streamed = False
        self._arguments: dict[str, str] = {}

    def argument_of(self, tool: str, argument: str) -> None:
        """Show calls of ``tool`` by their ``argument`` (the permission specifier)."""
        self._arguments[tool] = argument

    # --- the live region -------------------------------------------------------------------

    def _show(self, renderable: RenderableType) -> None:
        if not self.live:
            return
        if self._region is None:
            self._region = Live(
                renderable,
                console=self.console,
                transient=True,
                refresh_per_second=12,
                vertical_overflow="visible",
            )
            self._region.start()
        else:
            self._region.update(renderable, refresh=True)

    def busy(self, what: str = "thinking") -> None:
        """Show a spinner saying what is being waited for."""
        if self._kind is None:
            self._show(Spinner("dots", text=Text(f" {what}…", style="dim")))

    def pause(self) -> None:
        """Finish any streamed text and clear the region (before a prompt or a print)."""
        self._finish_block()
        if self._region is not None:
            self._region.stop()
            self._region = None

    # --- streamed blocks -------------------------------------------------------------------

    def _start_block(self, kind: str) -> None:
        self._finish_block()
        self._kind, self._buffer, self._streamed = kind, "", True
        if not self.live and kind == "thinking":
            self.console.out("thinking: ", style=_THINKING, end="")

    def _delta(self, text: str) -> None:
        if self._kind is None:
            self._start_block("text")
        self._buffer += text
        if not self.live:
            style = _THINKING if self._kind == "thinking" else None
            self.console.out(text, style=style, end="", highlight=False)
            return
        if self._kind == "thinking":
            self._show(Text(self._buffer, style=_THINKING))
            return
        done, rest = split_done(self._buffer)
        if done:
            self._print_markdown(done)
            self._buffer = rest
        self._show(Markdown(self._buffer))

    def _print_markdown(self, text: str) -> None:
        if self._region is not None:
            self._region.update(Text(""), refresh=True)
        self.console.print(Markdown(text))

    def _finish_block(self) -> None:
        kind, text = self._kind, self._buffer
        self._kind, self._buffer = None, ""
        if kind is None:
            return
        if not self.live:
            self.console.out("")
        elif kind == "thinking" and text.strip():
            self._print_thinking(text)
        elif text.strip():
            self._print_markdown(text)

    def _print_thinking(self, text: str) -> None:
        if self._region is not None:
            self._region.update(Text(""), refresh=True)
        self.console.print(Text(text.strip(), style=_THINKING))

    # --- events ----------------------------------------------------------------------------

    def on_event(self, event: AgentEvent) -> None:
        """Render one event (the ``on_event`` handler of ``agent.run``)."""
        match event:
            case ModelStreamEvent(event=raw):
                self._raw(raw)
            case MessageEvent(message=message):
                self._finish_block()
                if not self._streamed and message.text.strip():
                    self.pause()
                    self.console.print(Markdown(message.text.strip()))
                self._streamed = False
            case ToolCallEvent(call=call):
                self.pause()
                self.console.print(tool_line(call, self._arguments.get(call.name)))
                self.busy(f"running {call.name}")
            case ToolCallResultEvent(result=result, error=error):
                self.pause()
                self.console.print(result_text(result, error))
                self.busy()
            case ToolProgressEvent(display=display):
                self.busy(display or "working")
            case TurnEndedEvent():
                self.pause()
            case _:
                pass

    def _raw(self, raw: Any) -> None:
        match raw:
            case ContentBlockStart(block=block):
                kind = getattr(block, "type", "")
                if kind in ("text", "thinking"):
                    self._start_block(kind)
            case ContentBlockDelta(delta=TextDelta(text=text)):
                self._delta(text)
            case ContentBlockDelta(delta=ThinkingDelta(thinking=text)):
                if self._kind != "thinking":
                    self._start_block("thinking")
                self._delta(text)
            case ContentBlockStop():
                self._finish_block()
                self.busy()
            case _:
                pass

    def ended(self, result: RunResult[Any]) -> None:
        """A dim line for a turn that did not complete."""
        self.pause()
        if result.status == "incomplete":
            line = str(result).split(" · ")[0]
            self.console.print(Text(line, style="yellow"))
        if result.save_error is not None:
            self.console.print(Text(f"not saved: {result.save_error}", style="red"))
