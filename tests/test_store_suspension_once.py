"""A stored suspended turn holds its messages, counts, usage and call records once.

The suspension shares them with its turn (``shared_with_turn``) instead of repeating them,
and loading fills them back: the loaded turn equals the one written, and a record stored in
the earlier shape (every field repeated) still loads.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import cast

from dive.agent import Agent
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import Suspend, ToolContext, tool
from dive.turns import Turn


@tool
async def ask(ctx: ToolContext) -> str:
    """Ask a person."""
    return Suspend(prompt="which one?")  # type: ignore[return-value]


def _suspended(path: Path) -> Turn:
    store = SQLiteSessionStore(path)
    model = ScriptedModel([text("hi"), tool_use(call("ask", {}, id="c1"))])
    agent = Agent(model=model, tools=[ask], session=store.session("s"))

    async def main() -> Turn:
        await agent.run("hello")
        result = await agent.run("pick one")
        assert result.status == "suspended"
        await store.close()
        return result.turn

    return asyncio.run(main())


def _stored(path: Path) -> dict[str, object]:
    with sqlite3.connect(path) as conn:
        (data,) = conn.execute(
            "SELECT data FROM dive_entries WHERE status = 'suspended'"
        ).fetchone()
    return json.loads(data)


def _load(path: Path) -> Turn:
    async def main() -> Turn:
        store = SQLiteSessionStore(path)
        snap = await store.load("s")
        await store.close()
        assert snap.open_turn is not None
        return snap.open_turn

    return asyncio.run(main())


def test_a_stored_suspension_does_not_repeat_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    written = _suspended(path)
    record = _stored(path)
    suspension = cast("dict[str, list[str]]", record["suspension"])
    assert isinstance(suspension, dict)
    assert "turn_messages" not in suspension
    assert "tool_calls" not in suspension
    assert "model_calls" not in suspension
    assert set(suspension["shared_with_turn"]) >= {"turn_messages", "usage", "tool_calls"}
    loaded = _load(path)
    assert loaded.suspension == written.suspension
    assert loaded.messages == written.messages


def test_a_suspension_stored_with_every_field_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    written = _suspended(path)
    assert written.suspension is not None
    record = _stored(path)
    full = dict(record)
    full["suspension"] = json.loads(json.dumps(_as_json(written)["suspension"]))
    full.pop("schema", None)  # the earlier shape had no shared fields and schema 1
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE dive_entries SET data = ? WHERE status = 'suspended'", (json.dumps(full),)
        )
    assert _load(path).suspension == written.suspension


def _as_json(turn: Turn) -> dict[str, object]:
    from dive.messages.codec import to_jsonable

    data: dict[str, object] = to_jsonable(turn)
    return data
