"""A claim records its host and pid; a dead owner on this host loses it at once.

After ``kill -9`` the claim row stays until its TTL; a claimant on the same host (and PID
namespace) sees that the recorded pid is gone and takes over immediately. A claim recorded
by another host keeps its TTL (its pid says nothing here), and so does one whose process is
alive. The owner process is a real subprocess (``tests/durable_child.py hold``) killed with
SIGKILL, for SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dive.errors import SessionClaimedError
from dive.sessions import SQLiteSessionStore
from tests.conftest import fresh_pg_store, postgres_dsn

ROOT = Path(__file__).resolve().parent.parent
HAS_PROC = Path("/proc/self/stat").exists()
LONG_TTL = "600"  # far longer than the test: only the dead-pid rule can free the claim


def _child(backend: str, target: str, session: str, ttl: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.durable_child", backend, target, session, "-", "hold", ttl],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def _kill_unreaped(proc: subprocess.Popen[str]) -> None:
    """SIGKILL ``proc`` and wait until it is a zombie: dead, its pid not yet reaped."""
    proc.send_signal(signal.SIGKILL)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)


def _hold(backend: str, target: str, session: str) -> subprocess.Popen[str]:
    holder = _child(backend, target, session, LONG_TTL)
    assert holder.stdout is not None
    line = holder.stdout.readline().strip()
    assert line == "HOLDING", (line, holder.stderr.read() if holder.stderr else "")
    return holder


def _outcome(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.strip()


class Backend:
    """One store backend: its target, a store on it, and raw access to the claims table."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind, self.target = kind, target

    async def store(self) -> Any:
        if self.kind == "sqlite":
            return SQLiteSessionStore(self.target)
        from dive.sessions._postgres import PostgresSessionStore

        return await PostgresSessionStore(self.target).open()

    async def claim_row(self, session: str) -> tuple[str, str, int]:
        query = "SELECT owner, host, pid FROM dive_claims WHERE session_id = "
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as db:
                row = db.execute(query + "?", (session,)).fetchone()
        else:
            import psycopg

            async with await psycopg.AsyncConnection.connect(self.target) as conn:
                cur = await conn.execute(query + "%s", (session,))  # pyright: ignore[reportArgumentType]
                row = await cur.fetchone()
        assert row is not None
        return str(row[0]), str(row[1]), int(row[2])

    async def set_claim(self, session: str, column: str, value: str | int) -> None:
        assert column in ("host", "pid")
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as db:
                sql = f"UPDATE dive_claims SET {column} = ? WHERE session_id = ?"
                db.execute(sql, (value, session))
            return
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.target, autocommit=True) as conn:
            sql = f"UPDATE dive_claims SET {column} = %s WHERE session_id = %s"
            await conn.execute(sql, (value, session))  # pyright: ignore[reportArgumentType]


@pytest.fixture(params=["sqlite", "postgres"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        b = Backend("sqlite", str(tmp_path / "sessions.db"))
    else:
        await (await fresh_pg_store()).close()
        b = Backend("postgres", postgres_dsn())
    store = await b.store()  # the schema exists before any child starts
    await store.close()
    return b


async def test_a_claim_records_the_host_and_pid_of_its_process(backend: Backend) -> None:
    holder = _hold(backend.kind, backend.target, "s")
    try:
        owner, host, pid = await backend.claim_row("s")
    finally:
        _kill(holder)
    assert pid == holder.pid
    assert host.split("/")[0] == os.uname().nodename
    assert owner.startswith(f"{os.uname().nodename}:{holder.pid}:")


async def test_after_kill_9_a_claimant_on_this_host_takes_over_at_once(backend: Backend) -> None:
    holder = _hold(backend.kind, backend.target, "s")
    _kill(holder)
    out = _outcome(_child(backend.kind, backend.target, "s", LONG_TTL))
    assert out.splitlines() == ["HOLDING", "RAN completed"]


async def test_a_live_owner_keeps_its_claim(backend: Backend) -> None:
    holder = _hold(backend.kind, backend.target, "s")
    try:
        store = await backend.store()
        try:
            with pytest.raises(SessionClaimedError, match=rf"pid {holder.pid}"):
                await store.claim("s", "someone-else", 30)
        finally:
            await store.close()
    finally:
        _kill(holder)


async def test_a_claim_from_another_host_keeps_its_ttl(backend: Backend) -> None:
    holder = _hold(backend.kind, backend.target, "s")
    _kill(holder)
    await backend.set_claim("s", "host", "another-host")  # its pid means nothing on this host
    out = _outcome(_child(backend.kind, backend.target, "s", LONG_TTL))
    assert out.startswith("CLAIMED"), out
    assert "another-host" in out


async def test_a_zombie_owner_counts_as_dead(backend: Backend) -> None:
    if not HAS_PROC:
        pytest.skip("zombie detection reads /proc")
    holder = _hold(backend.kind, backend.target, "s")
    _kill_unreaped(holder)
    try:
        store = await backend.store()
        try:
            await store.claim("s", "next-owner", 30)
        finally:
            await store.close()
        owner, _, pid = await backend.claim_row("s")
        assert (owner, pid) == ("next-owner", os.getpid())
    finally:
        _kill(holder)


async def test_a_renewal_keeps_the_host_and_pid(backend: Backend) -> None:
    store = await backend.store()
    try:
        await store.claim("r", "me", 30)
        await backend.set_claim("r", "pid", 1)
        await store.renew_claim("r", "me", 30)
        assert (await backend.claim_row("r"))[2] == os.getpid()
    finally:
        await store.close()


async def test_a_version_2_file_gains_the_columns_and_old_claims_keep_their_ttl(
    tmp_path: Path,
) -> None:
    from dive.sessions._sqlite_schema import _MIGRATIONS  # pyright: ignore[reportPrivateUsage]

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE dive_meta (key TEXT PRIMARY KEY, value TEXT)")
        for version in (1, 2):
            db.executescript(_MIGRATIONS[version])
        db.execute("INSERT INTO dive_meta VALUES ('schema_version', '2')")
        db.execute("INSERT INTO dive_claims VALUES ('old', 'old-owner', 4102444800)")  # 2100
    store = SQLiteSessionStore(path)
    try:
        with pytest.raises(SessionClaimedError, match="old-owner"):
            await store.claim("old", "new-owner", 30)  # no host recorded: the TTL holds
        await store.claim("fresh", "new-owner", 30)
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        version = db.execute("SELECT value FROM dive_meta WHERE key = 'schema_version'")
        assert version.fetchone() == ("3",)
        row = db.execute("SELECT host, pid FROM dive_claims WHERE session_id = 'fresh'")
        assert row.fetchone()[1] == os.getpid()
