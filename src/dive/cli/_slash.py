"""The chat's slash commands, as one table: name → (what it does, handler).

A handler takes the chat and the rest of the line and returns True to leave the chat.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from dive.cli._chatstate import Chat
from dive.cli._errors import CliError
from dive.cli._pick import new_session_id, session_exists
from dive.errors import DiveError

__all__ = ["COMMANDS", "run_slash"]

Handler = Callable[[Chat, str], Awaitable[bool]]


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
    choice = chat.runtime.switch_model(arg)
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


async def _tools(chat: Chat, _: str) -> bool:
    table = Table(box=None, show_header=False, pad_edge=False)
    for tool in chat.runtime.agent.tools:
        d = tool.definition
        notes = "asks first" if d.requires_approval else ""
        if d.effect_type == "read_only" or (d.annotations and d.annotations.read_only):
            notes = "read-only"
        table.add_row(d.name, notes, Text((d.description or "").splitlines()[0][:70], style="dim"))
    chat.console.print(table)
    for toolset in chat.runtime.toolsets:
        chat.console.print(f"MCP server {getattr(toolset, 'name', toolset)!s}")
    config = chat.runtime.settings.permissions
    chat.console.print(Text(f"permission mode: {config.mode}", style="dim"))
    return False


async def _compact(chat: Chat, _: str) -> bool:
    try:
        compaction: Any = importlib.import_module("dive.compaction")
    except ImportError:
        chat.console.print(Text("compaction is not available in this install", style="yellow"))
        return False
    chat.renderer.busy("compacting")
    try:
        result = await compaction.compact_session(chat.session, chat.runtime.agent.model)
    finally:
        chat.renderer.pause()
    summary = str(getattr(result, "summary", "") or "")
    if hasattr(result, "summary") and not isinstance(result.summary, str):
        summary = str(getattr(result.summary, "text", result.summary))
    chat.console.print(Text("compacted; the summary the model now starts from:", style="dim"))
    chat.console.print(Markdown(summary[:2000] or "(empty)"))
    return False


COMMANDS: dict[str, tuple[str, Handler]] = {
    "help": ("these commands", _help),
    "clear": ("start a new session (the current one is kept)", _clear),
    "compact": ("summarise the conversation so far to free the context", _compact),
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
