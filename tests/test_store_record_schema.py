"""A stored record newer than this code is refused, naming session, revision and both schema
versions, and nothing is overwritten (issue 12)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent
from dive.errors import MessageValidationError, UnsupportedSchemaError
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, text
from dive.testing.session_conformance import turn
from dive.turns import SCHEMA_VERSION, Turn
from tests.conftest import fresh_pg_store, postgres_dsn

NEWER = SCHEMA_VERSION + 998


def _newer(data: str, *, extra: bool) -> str:
    record: dict[str, Any] = json.loads(data)
    record["schema"] = NEWER
    if extra:
        record["field_from_the_future"] = {"x": 1}
    return json.dumps(record)


def _check(err: UnsupportedSchemaError) -> None:
    message = str(err)
    assert "'x'" in message
    assert "revision 1" in message
    assert str(NEWER) in message
    assert f"({SCHEMA_VERSION})" in message
    assert "upgrade dive-agents" in message.lower()


def test_turn_from_json_refuses_a_newer_schema() -> None:
    data = _newer(turn().to_json(), extra=False)
    with pytest.raises(MessageValidationError, match=rf"schema.*{NEWER}.*upgrade"):
        Turn.from_json(data)
    assert Turn.from_json(turn().to_json()).schema == SCHEMA_VERSION


@pytest.mark.parametrize("extra", [False, True])
async def test_sqlite_newer_record_is_refused_and_kept(tmp_path: Path, extra: bool) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    await Agent(model=ScriptedModel([text("a")]), session=store.session("x")).run("one")
    await store.close()
    with sqlite3.connect(path) as db:
        [(data,)] = db.execute("SELECT data FROM dive_entries").fetchall()
        newer = _newer(str(data), extra=extra)
        db.execute("UPDATE dive_entries SET data = ?", (newer,))
    store = SQLiteSessionStore(path)
    for op in (lambda: store.load("x"), lambda: store.turns("x")):
        with pytest.raises(UnsupportedSchemaError) as info:
            await op()
        _check(info.value)
    with pytest.raises(UnsupportedSchemaError):
        await Agent(model=ScriptedModel([text("b")]), session=store.session("x")).run("two")
    await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT data FROM dive_entries").fetchall() == [(newer,)]


async def test_postgres_newer_record_is_refused_and_kept() -> None:
    import psycopg

    store = await fresh_pg_store()
    await Agent(model=ScriptedModel([text("a")]), session=store.session("x")).run("one")
    dsn = postgres_dsn()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT data FROM dive_entries WHERE session_id = 'x'")
        row = await cur.fetchone()
        assert row is not None
        newer = _newer(str(row[0]), extra=True)
        await conn.execute("UPDATE dive_entries SET data = %s WHERE session_id = 'x'", (newer,))
    with pytest.raises(UnsupportedSchemaError) as info:
        await store.load("x")
    _check(info.value)
    with pytest.raises(UnsupportedSchemaError):
        await Agent(model=ScriptedModel([text("b")]), session=store.session("x")).run("two")
    await store.close()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute("SELECT data FROM dive_entries WHERE session_id = 'x'")
        assert await cur.fetchall() == [(newer,)]
