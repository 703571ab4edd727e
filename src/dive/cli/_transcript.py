"""How messages, tool calls and results look in the terminal (chat and ``sessions show``).

A tool call is one line, ``● Bash(ls -la)`` (the argument the permission engine matches, or
the arguments as short JSON); its result is at most :data:`RESULT_LINES` lines under
``⎿``, with a count of the rest; an error result is red.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from dive.messages import Message, ToolCall, ToolResult
from dive.turns import Turn

__all__ = ["RESULT_LINES", "print_transcript", "result_text", "tool_line", "turn_line"]

RESULT_LINES = 4
_WIDTH = 100
_SPECIFIERS = ("command", "file_path", "path", "pattern", "url", "query", "question")


def _short(text: str, width: int = _WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def tool_line(call: ToolCall, argument: str | None = None) -> Text:
    """``● Name(specifier)`` for a call (``argument`` names its specifier, when known)."""
    args = dict(call.arguments)
    keys = [argument] if argument else [k for k in _SPECIFIERS if k in args]
    value = next((args[k] for k in keys if isinstance(args.get(k), str)), None)
    shown = value if isinstance(value, str) else json.dumps(args, ensure_ascii=False, default=str)
    line = Text("● ", style="cyan")
    line.append(call.name, style="bold")
    line.append(f"({_short(shown, 80)})" if shown not in ("{}", "") else "")
    return line


def result_text(result: ToolResult | None, error: str | None = None) -> Text:
    """The first lines of a result under ``⎿`` (red when it is an error)."""
    body = result.text if result is not None else (error or "no result")
    failed = result is None or result.is_error
    lines = body.rstrip().splitlines() or ["(no output)"]
    shown = [_short(line) for line in lines[:RESULT_LINES]]
    more = len(lines) - RESULT_LINES
    out = Text()
    for i, line in enumerate(shown):
        out.append("  ⎿  " if i == 0 else "     ", style="dim")
        out.append(line + "\n", style="red" if failed else "")
    if more > 0:
        out.append(f"     … +{more} lines\n", style="dim")
    out.rstrip()
    return out


def turn_line(turn: Turn) -> Text:
    """A dim one-line summary of a turn record."""
    parts = [turn.status]
    if turn.outcome is not None:
        parts[0] += f" ({turn.outcome.reason})"
    parts.append(f"{turn.model_calls} model call{'s' if turn.model_calls != 1 else ''}")
    if turn.tool_calls:
        parts.append(f"{len(turn.tool_calls)} tool call{'s' if len(turn.tool_calls) != 1 else ''}")
    cost = turn.usage.cost
    parts.append(f"${cost:.4f}" if cost is not None else "cost unknown")
    return Text(" · ".join(parts), style="dim")


def _message(console: Console, message: Message, argument_of: dict[str, str]) -> None:
    if message.role == "user" and message.text.strip():
        console.print(Text("> ", style="bold green") + Text(message.text.strip()))
    elif message.role == "assistant":
        if message.text.strip():
            console.print(Markdown(message.text.strip()))
        for call in message.tool_calls:
            console.print(tool_line(call, argument_of.get(call.name)))
    elif message.role == "tool" and message.tool_result is not None:
        console.print(result_text(message.tool_result))


def print_transcript(console: Console, turns: Sequence[Turn], *, last: int | None = None) -> None:
    """Print turns (the ``last`` ones only, when given) with a summary line each."""
    shown = list(turns)[-last:] if last else list(turns)
    for turn in shown:
        for message in turn.messages:
            if message.kind not in ("standard", "compaction_summary"):
                continue
            _message(console, message, {})
        console.print(turn_line(turn))
