"""The chat's slash commands, as one table: name → (what it does, handler).

A handler takes the chat and the rest of the line and returns True to leave the chat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from dive.cli._chatstate import Chat
from dive.cli._errors import CliError
from dive.cli._pick import new_session_id, session_exists
from dive.compaction import DEFAULT_INSTRUCTIONS, compact_session
from dive.errors import DiveError
from dive.messages import Message
from dive.tools import Tool

__all__ = ["COMMANDS", "run_slash"]

Handler = Callable[[Chat, str], Awaitable[bool]]

COMPACT_KEEP_RECENT_TOKENS = 0
"""``/compact`` summarises everything after the first exchange (nothing recent is kept)."""


async def _help(chat: Chat, _: str) -> bool:
    table = Table(box=None, show_header=False, pad_edge=False)
    for name, (about, _handler) in COMMANDS.items():
        table.add_row(f"/{name}", about)
    chat.console.print(table)
    chat.console.print(
        Text(
            "Enter sends · Esc Enter or a trailing \\ starts a new line · Ctrl-C once stops "
            "after the current step, twice stops now · Ctrl-D quits",
            style="dim",
        )
    )
    return False


async def _quit(_chat: Chat, _: str) -> bool:
    return True


async def _clear(chat: Chat, _: str) -> bool:
    old = chat.session.id
    chat.session = chat.runtime.store.session(new_session_id())
    chat.console.print(f"new session {chat.session.id} (the previous one is kept: /resume {old})")
    return False


async def _cost(chat: Chat, _: str) -> bool:
    usage = await chat.session.total_usage()
    chat.console.print(f"session {chat.session.id}: {usage}")
    if chat.runtime.choice.offline:
        chat.console.print(
            Text("priced as the model the simulator answers as; nothing was billed", style="dim")
        )
    return False


async def _model(chat: Chat, arg: str) -> bool:
    if not arg:
        chat.console.print(f"model: {chat.runtime.choice.label}")
        return False
    choice = await chat.runtime.switch_model(arg)
    if choice.notice:
        chat.console.print(Text(choice.notice, style="yellow"))
    chat.console.print(f"model: {choice.label}")
    return False


async def _sessions(chat: Chat, _: str) -> bool:
    rows = await chat.runtime.store.list(limit=15)
    table = Table("id", "updated", "turns", "", box=None, pad_edge=False)
    for row in rows:
        mark = "← current" if row.id == chat.session.id else ""
        if row.suspended:
            mark = (mark + " suspended").strip()
        updated = row.updated_at.strftime("%Y-%m-%d %H:%M") if row.updated_at else ""
        table.add_row(row.id, updated, str(row.turn_count), mark)
    chat.console.print(table if rows else "no sessions yet")
    return False


async def _resume(chat: Chat, arg: str) -> bool:
    if not arg:
        await _sessions(chat, "")
        chat.console.print(Text("/resume ID continues one of them", style="dim"))
        return False
    if not await session_exists(chat.runtime.store, arg):
        chat.console.print(Text(f"no session {arg}; /sessions lists them", style="yellow"))
        return False
    await chat.switch(chat.runtime.store.session(arg))
    return False


def _tool_row(table: Table, tool: Tool) -> None:
    d = tool.definition
    notes = "read-only" if d.read_only or tool.annotations.read_only is True else ""
    if d.requires_approval:
        notes = "asks first"
    about = (d.description or "").strip().splitlines()
    table.add_row(d.name, notes, Text(about[0][:70] if about else "", style="dim"))


async def _tools(chat: Chat, _: str) -> bool:
    table = Table(box=None, show_header=False, pad_edge=False)
    for tool in chat.runtime.agent.tools:
        _tool_row(table, tool)
    chat.console.print(table)
    for server in chat.runtime.servers:
        listed = Table(box=None, show_header=False, pad_edge=False)
        for tool in await server.tools():
            _tool_row(listed, tool)
        chat.console.print(f"MCP server {server.name}:")
        chat.console.print(listed)
    config = chat.runtime.settings.permissions
    chat.console.print(Text(f"permission mode: {config.mode}", style="dim"))
    return False


async def _compact(chat: Chat, focus: str) -> bool:
    agent = chat.runtime.agent
    instructions = DEFAULT_INSTRUCTIONS
    if focus:
        instructions += f"\n\nThe user asks the summary to focus on: {focus}"
    chat.renderer.busy("compacting")
    try:
        result = await compact_session(
            chat.session,
            agent.model,
            keep_recent_tokens=COMPACT_KEEP_RECENT_TOKENS,
            instructions=instructions,
            system=agent.system_prompt(),
            tools=[t.definition for t in agent.tools],
        )
    finally:
        chat.renderer.pause()
    if result.summary is None:
        chat.console.print(Text("nothing to compact yet: the session is short", style="dim"))
        return False
    cost = f"${result.cost:.4f}" if result.cost is not None else "cost unknown"
    chat.console.print(
        Text(
            f"compacted {result.compacted} message(s): {result.tokens_before:,} → "
            f"{result.tokens_after:,} tokens ({result.measured}); the summary cost {cost}. "
            "The conversation continues from this summary:",
            style="dim",
        )
    )
    chat.console.print(Markdown(_summary_text(result.summary)[:2000]))
    return False


def _summary_text(summary: Message) -> str:
    text = summary.text
    inside = text.partition("<summary>")[2].partition("</summary>")[0]
    return inside.strip() or text


COMMANDS: dict[str, tuple[str, Handler]] = {
    "help": ("these commands", _help),
    "clear": ("start a new session (the current one is kept)", _clear),
    "compact": ("summarise the conversation to free the context: /compact [focus]", _compact),
    "cost": ("tokens and cost of this session", _cost),
    "model": ("show the model, or switch: /model provider:model", _model),
    "resume": ("continue a stored session: /resume ID", _resume),
    "sessions": ("list stored sessions", _sessions),
    "tools": ("the tools the agent has", _tools),
    "quit": ("leave (also /exit, Ctrl-D)", _quit),
}
_ALIASES = {"exit": "quit", "q": "quit", "?": "help"}


async def run_slash(chat: Chat, line: str) -> bool:
    """Run ``/name args``; True when the chat should end. Errors are shown, not raised."""
    name, _, arg = line[1:].strip().partition(" ")
    name = _ALIASES.get(name.lower(), name.lower())
    entry = COMMANDS.get(name)
    if entry is None:
        chat.console.print(Text(f"unknown command /{name}; /help lists them", style="yellow"))
        return False
    try:
        return await entry[1](chat, arg.strip())
    except (DiveError, CliError, OSError) as exc:
        chat.renderer.pause()
        chat.console.print(Text(f"/{name}: {exc}", style="red"))
        return False
