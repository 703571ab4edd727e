"""An agent using a local MCP server: its tools, and a question that outlives the process.

    python examples/mcp_agent.py

The agent gets the tools of ``examples/mcp_files_server.py`` (started over stdio) as
``mcp__notes__<tool>``. It writes and lists notes, then asks to delete one: the server asks
the user to confirm, and the turn *suspends* (nothing waits in memory). The turn is saved in
SQLite; a second run — a new store, a new server process, as after a restart — resumes it
with the answer, and the call is sent to the server again with it.

Offline, dive's scripted model plays the model (no API key needed).
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import tempfile
from pathlib import Path

from dive import Agent
from dive.mcp import MCPServerStdio
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use

SERVER = Path(__file__).with_name("mcp_files_server.py")


def notes_server(folder: Path, key: str) -> MCPServerStdio:
    return MCPServerStdio(
        "notes",
        sys.executable,
        [str(SERVER)],
        env={"NOTES_DIR": str(folder / "notes"), "NOTES_STATE_KEY": key},
    )


async def first_process(folder: Path, key: str) -> None:
    model = ScriptedModel(
        [
            tool_use(call("mcp__notes__write_note", {"name": "todo", "text": "buy milk"})),
            tool_use(call("mcp__notes__list_notes", {})),
            tool_use(call("mcp__notes__delete_note", {"name": "todo"}, id="del")),
        ]
    )
    store = SQLiteSessionStore(folder / "sessions.db")
    async with notes_server(folder, key) as notes:
        tools = await notes.tools()
        print("tools:", ", ".join(t.name for t in tools))
        for t in tools:
            print(f"  {t.name}: effect={t.definition.effect_type} origin={t.definition.origin}")
        agent = Agent(model=model, toolsets=[notes], session=store.session("demo"))
        result = await agent.run("Write a todo note, then clean up.")
    await store.close()
    for event in result.tool_call_results():
        if event.result is not None:
            print(f"{event.call.name} -> {event.result.text}")
    assert result.turn.suspension is not None, result
    [pending] = result.turn.suspension.pending_tool_calls
    print(f"suspended ({pending.reason}): {pending.prompt}")
    print(f"  the server's form: {dict(pending.metadata)['requested_schema']}")


async def second_process(folder: Path, key: str) -> None:
    store = SQLiteSessionStore(folder / "sessions.db")  # a new store instance
    model = ScriptedModel([text("Deleted the todo note.")])
    async with notes_server(folder, key) as notes:  # a new server process
        agent = Agent(model=model, toolsets=[notes], session=store.session("demo"))
        result = await agent.run(tool_results={"del": {"ok": True}})  # the user said yes
    await store.close()
    for event in result.tool_call_results():
        if event.result is not None:
            print(f"resumed: {event.call.name} -> {event.result.text}")
    print(f"{result.status}: {result.output_text}")
    print("notes left:", sorted(p.name for p in (folder / "notes").glob("*.txt")) or "none")


def main() -> None:
    key = secrets.token_hex(32)  # shared by both server processes (a deployment's secret)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        asyncio.run(first_process(folder, key))
        asyncio.run(second_process(folder, key))


if __name__ == "__main__":
    main()
