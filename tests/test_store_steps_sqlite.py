"""SQLite step checkpoints: writes grow with the step, not the turn; other writers; options."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent, Durability, Limits
from dive.errors import RevisionConflictError, UserError
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.testing.session_conformance import turn
from dive.tools import tool


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _count_writes(monkeypatch: pytest.MonkeyPatch, sizes: list[int]) -> None:
    """Record the length of every INSERT/UPDATE statement run on connections opened from now."""
    connect = sqlite3.connect

    def trace(sql: str) -> None:
        head = sql.lstrip()[:6].upper()
        if head in ("INSERT", "UPDATE"):
            sizes.append(len(sql.encode()))

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)


async def test_step_writes_do_not_grow_with_the_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    _count_writes(monkeypatch, sizes)  # both the worker's and the inline connection
    store = SQLiteSessionStore(tmp_path / "s.db")
    await store.load("warm")
    per_checkpoint: list[int] = []

    original = store.checkpoint

    async def checkpoint(id: str, t: object, *, expected_revision: int) -> int:
        before = len(sizes)
        out = await original(id, t, expected_revision=expected_revision)  # type: ignore[arg-type]
        per_checkpoint.append(sum(sizes[before:]))
        return out

    store.checkpoint = checkpoint  # type: ignore[method-assign]
    n = 300
    model = ScriptedModel(
        [tool_use(call("add", {"a": i, "b": 1}, id=f"c{i}")) for i in range(n)] + [text("done")]
    )
    agent = Agent(
        model=model,
        tools=[add],
        limits=Limits(max_model_calls_per_turn=1000),
        durability=Durability(checkpoint_steps=True),
    )
    r = await agent.run("go", session=store.session("long"))
    assert r.status == "completed"
    running = per_checkpoint[1:-1]  # the first writes the record; the last folds the steps
    assert len(running) >= 3 * n - 1
    assert min(running) > 0  # every checkpoint wrote something we saw
    early = max(running[3:60])
    late = max(running[-60:])
    assert late <= early + 64, (early, late)
    print("bytes per checkpoint, early/late:", early, late, "final:", per_checkpoint[-1])
    # the final write is the whole turn again, so reads need no steps
    conn = sqlite3.connect(tmp_path / "s.db")
    assert conn.execute("SELECT COUNT(*) FROM dive_steps").fetchone()[0] == 0
    conn.close()
    reopened = SQLiteSessionStore(tmp_path / "s.db")
    [stored] = await reopened.turns("long")
    assert stored == replace(r.turn, revision=stored.revision, persistence="saved")
    await reopened.close()
    await store.close()


async def test_another_writer_forces_a_full_record(tmp_path: Path) -> None:
    a = SQLiteSessionStore(tmp_path / "s.db")
    b = SQLiteSessionStore(tmp_path / "s.db")
    t = turn("running")
    rev = await a.checkpoint("x", t, expected_revision=0)
    rev = await a.checkpoint("x", replace(t, iterations=1), expected_revision=rev)
    # b replaces the open turn with different messages; a's memory of it is now stale
    other = replace(t, messages=(t.messages[0],), iterations=2)
    rev = await b.checkpoint("x", other, expected_revision=rev)
    grown = replace(t, messages=(*t.messages, t.messages[0]), iterations=3)
    rev = await a.checkpoint("x", grown, expected_revision=rev)
    for store in (a, b, SQLiteSessionStore(tmp_path / "s.db")):
        snap = await store.load("x")
        assert snap.open_turn == replace(grown, revision=rev, persistence="saved")
    await a.close()
    await b.close()


async def test_a_new_store_recovers_every_step(tmp_path: Path) -> None:
    a = SQLiteSessionStore(tmp_path / "s.db")
    t = turn("running")
    rev = 0
    for i in range(20):
        msgs = (*t.messages, *(t.messages[1],) * i)
        last = replace(t, messages=msgs, iterations=i)
        rev = await a.checkpoint("r", last, expected_revision=rev)
        fresh = SQLiteSessionStore(tmp_path / "s.db")
        assert (await fresh.load("r")).open_turn == replace(last, revision=rev, persistence="saved")
        await fresh.close()
    await a.close()


async def test_a_corrupted_step_names_session_and_revision(tmp_path: Path) -> None:
    from dive.errors import SessionCorruptedError

    a = SQLiteSessionStore(tmp_path / "s.db")
    t = turn("running")
    rev = await a.checkpoint("c", t, expected_revision=0)
    rev = await a.checkpoint("c", replace(t, iterations=1), expected_revision=rev)
    db = sqlite3.connect(tmp_path / "s.db")
    db.execute("UPDATE dive_steps SET data = '{not json'")
    db.commit()
    db.close()
    with pytest.raises(SessionCorruptedError, match=r"'c'.*revision 2"):
        await a.load("c")
    await a.close()


@pytest.mark.parametrize("mode", ["normal", "full"])
async def test_synchronous_option(tmp_path: Path, mode: str) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db", synchronous=mode)  # type: ignore[arg-type]
    await store.checkpoint("s", turn(), expected_revision=0)
    conn = store._conn  # pyright: ignore[reportPrivateUsage]
    assert conn is not None
    level = conn.execute("PRAGMA synchronous").fetchone()[0]
    assert level == {"normal": 1, "full": 2}[mode]
    await store.close()


def test_synchronous_rejects_other_values(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"synchronous=.off.*normal.*full"):
        SQLiteSessionStore(tmp_path / "s.db", synchronous="off")  # type: ignore[arg-type]
    assert not (tmp_path / "s.db").exists()


async def test_a_step_behind_another_writers_lock_waits_for_it(tmp_path: Path) -> None:
    """The inline path never waits on a lock: the step goes to the worker, which does."""
    store = SQLiteSessionStore(tmp_path / "s.db")
    t = turn("running")
    rev = await store.checkpoint("x", t, expected_revision=0)
    blocker = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    write = asyncio.ensure_future(
        store.checkpoint("x", replace(t, iterations=1), expected_revision=rev)
    )
    await asyncio.sleep(0.2)
    assert not write.done()  # waiting on the worker thread for the lock, loop still free
    blocker.execute("COMMIT")
    blocker.close()
    rev = await write
    snap = await SQLiteSessionStore(tmp_path / "s.db").load("x")
    assert snap.open_turn == replace(t, iterations=1, revision=rev, persistence="saved")
    await store.close()


async def test_a_step_with_a_stale_revision_is_refused(tmp_path: Path) -> None:
    a = SQLiteSessionStore(tmp_path / "s.db")
    b = SQLiteSessionStore(tmp_path / "s.db")
    t = turn("running")
    rev = await a.checkpoint("x", t, expected_revision=0)
    rev = await a.checkpoint("x", replace(t, iterations=1), expected_revision=rev)
    await b.checkpoint("x", replace(t, iterations=2), expected_revision=rev)
    with pytest.raises(RevisionConflictError):
        await a.checkpoint("x", replace(t, iterations=3), expected_revision=rev)
    snap = await a.load("x")
    assert snap.open_turn is not None
    assert snap.open_turn.iterations == 2
    await a.close()
    await b.close()
