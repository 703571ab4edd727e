"""SQLite store faults (issue 12): a deleted or replaced file, disk full, a lock held past the
busy timeout, garbage files. Each surfaces as a ``StoreError`` subclass naming the file and
the session, with the driver's exception as the cause; nothing is reported saved that nobody
can read, and stored data is never lost."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from dive.agent import Agent
from dive.errors import (
    SaveRejectedError,
    StoreCorruptedError,
    StoreError,
    StoreFileReplacedError,
    StoreUnavailableError,
)
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.testing.session_conformance import turn
from dive.tools import tool


def _raw(exc: BaseException) -> None:
    """The error is a dive StoreError caused by the driver's error, not the raw one."""
    assert isinstance(exc, StoreError), repr(exc)
    assert isinstance(exc.__cause__, sqlite3.Error), repr(exc.__cause__)


def _remove(path: Path, *suffixes: str) -> None:
    for suffix in suffixes:
        if os.path.exists(f"{path}{suffix}"):
            os.remove(f"{path}{suffix}")


# --- the file deleted or replaced while open ---------------------------------------------------


def _vanish(path: Path, how: str) -> None:
    if how == "unlink":
        os.remove(path)
    elif how == "unlink_all":
        _remove(path, "", "-wal", "-shm")
    else:
        other = sqlite3.connect(f"{path}.other")
        other.execute("CREATE TABLE t (x)")
        other.commit()
        other.close()
        os.replace(f"{path}.other", path)


@pytest.mark.parametrize("how", ["unlink", "unlink_all", "replace"])
async def test_file_vanishing_during_a_turn_is_never_reported_saved(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)

    @tool(effect_type="read_only")
    async def vanish() -> str:
        """Remove the session file."""
        _vanish(path, how)
        return "gone"

    model = ScriptedModel([text("a"), tool_use(call("vanish", {})), text("b")])
    agent = Agent(model=model, tools=[vanish], session=store.session("user-42"))
    assert (await agent.run("one")).persistence == "saved"
    second = await agent.run("two")
    assert second.persistence == "failed"
    with pytest.raises(StoreFileReplacedError, match=str(path)) as info:
        await store.checkpoint("user-42", turn(), expected_revision=1)
    assert isinstance(info.value, SaveRejectedError)
    assert "'user-42'" in str(info.value)
    with pytest.raises(StoreFileReplacedError):  # reads too: that data is not at the path
        await store.load("user-42")
    with pytest.raises(StoreFileReplacedError):  # and a new turn is refused before it starts
        await agent.run("three")
    await store.close()
    if how != "replace":  # (a replaced file next to the old -wal is SQLite's own hazard)
        again = SQLiteSessionStore(path)
        assert await again.turns("user-42") == []  # what the path holds: nothing saved since
        await again.close()


@pytest.mark.parametrize("how", ["unlink", "replace"])
async def test_file_vanishing_between_turns_is_refused(tmp_path: Path, how: str) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    agent = Agent(model=ScriptedModel([text("a"), text("b")]), session=store.session("u"))
    assert (await agent.run("one")).persistence == "saved"
    _vanish(path, how)
    with pytest.raises(StoreFileReplacedError, match="'u'"):
        await agent.run("two")
    await store.close()


# --- disk full, locks, garbage --------------------------------------------------------------


async def _limit_pages(store: SQLiteSessionStore, extra: int) -> None:
    def limit(c: sqlite3.Connection) -> None:
        pages = int(c.execute("PRAGMA page_count").fetchone()[0])
        c.execute(f"PRAGMA max_page_count={pages + extra}")

    await store._read(store._where("limiting"), limit)


async def test_disk_full_is_a_store_error_and_the_store_recovers(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    await store.checkpoint("full", turn(), expected_revision=0)
    await _limit_pages(store, 0)
    big = turn(text="x" * 200_000)
    for _ in range(2):  # the second call must not trip over the first one's leftovers
        with pytest.raises(StoreUnavailableError) as info:
            await store.checkpoint("full", big, expected_revision=1)
        _raw(info.value)
        message = str(info.value)
        assert str(path) in message
        assert "'full'" in message
        assert "full" in message.lower()
    assert (await store.load("full")).revision == 1
    await _limit_pages(store, 10_000)
    assert await store.checkpoint("full", big, expected_revision=1) == 2
    await store.close()
    again = SQLiteSessionStore(path)
    assert len(await again.turns("full")) == 2
    await again.close()


async def test_lock_held_past_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path, busy_timeout=0.2)
    await store.checkpoint("busy", turn(), expected_revision=0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreUnavailableError) as info:
            await store.checkpoint("busy", turn(), expected_revision=1)
        _raw(info.value)
        assert str(path) in str(info.value)
        assert "'busy'" in str(info.value)
        assert "busy_timeout" in str(info.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert await store.checkpoint("busy", turn(), expected_revision=1) == 2
    await store.close()


async def test_lock_held_at_first_open(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    store = SQLiteSessionStore(path, busy_timeout=0.2)
    try:
        with pytest.raises(StoreUnavailableError) as info:
            await store.load("first")
        _raw(info.value)
        assert str(path) in str(info.value)
        assert "'first'" in str(info.value)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert (await store.load("first")).revision == 0
    await store.close()


async def test_garbage_file_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    await store.checkpoint("g", turn(), expected_revision=0)
    await store.close()
    _remove(path, "-wal", "-shm")
    garbage = os.urandom(8192)
    path.write_bytes(garbage)
    store = SQLiteSessionStore(path)
    for op in (lambda: store.load("g"), lambda: store.checkpoint("g", turn(), expected_revision=0)):
        with pytest.raises(StoreCorruptedError) as info:
            await op()
        _raw(info.value)
        assert str(path) in str(info.value)
        assert "'g'" in str(info.value)
    with pytest.raises(StoreCorruptedError):
        await store.list()
    await store.close()
    assert path.read_bytes() == garbage
