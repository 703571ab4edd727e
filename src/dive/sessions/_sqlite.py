"""``SQLiteSessionStore``: the embedded default.

Stdlib ``sqlite3`` in WAL mode, every operation on one worker thread (off the event loop), one
``BEGIN IMMEDIATE`` transaction per write, so several processes can share one file. The schema
is versioned; a newer version than this code knows refuses to open. Claims are rows with an
owner and a wall-clock expiry.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from dive.errors import (
    SessionClaimedError,
    StoreFileReplacedError,
    StoreUnavailableError,
    UnsupportedSchemaError,
    UserError,
)
from dive.llm import Usage
from dive.messages import Message
from dive.sessions._codec import (
    decode_entry,
    encode_entry,
    encode_unstamped,
    entry_kind,
    stamp,
)
from dive.sessions._log import (
    Compaction,
    Entry,
    Head,
    fork_entries,
    plan_checkpoint_tail,
    plan_remove_last,
    snapshot,
    sum_usage,
    superseded,
)
from dive.sessions._protocol import Session, SessionInfo, SessionSnapshot, validate_session_id
from dive.sessions._sqlite_faults import FileIdentity, Where, is_busy, translate
from dive.turns import Turn

__all__ = ["SCHEMA_VERSION", "SQLiteSessionStore"]

T = TypeVar("T")

SCHEMA_VERSION = 1

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE dive_sessions (
        id TEXT PRIMARY KEY,
        revision INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        title TEXT,
        metadata TEXT NOT NULL DEFAULT '{}',
        turn_count INTEGER NOT NULL DEFAULT 0,
        suspended INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE dive_entries (
        session_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        revision INTEGER NOT NULL,
        kind TEXT NOT NULL,
        turn_id TEXT,
        status TEXT,
        superseded INTEGER NOT NULL DEFAULT 0,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE INDEX dive_entries_turn ON dive_entries (session_id, turn_id);
    CREATE TABLE dive_claims (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
}


class SQLiteSessionStore:
    """Sessions in one SQLite file (``":memory:"`` is refused: use ``MemorySessionStore``).

    Args:
        path: the database file; created (with its folder) on first use.
        busy_timeout: seconds to wait for another connection's lock before failing with
            ``StoreUnavailableError``.

    Every failure is a ``StoreError`` subclass naming the file and the session. The file's
    identity is checked before every operation: if it was deleted or replaced while open,
    the store refuses (``StoreFileReplacedError``) instead of writing into a file nobody can
    read.
    """

    def __init__(self, path: str | Path, *, busy_timeout: float = 10.0) -> None:
        if str(path) == ":memory:":
            raise UserError("SQLiteSessionStore needs a file path; use MemorySessionStore instead")
        self.path = Path(path)
        self._abs = Path(os.path.abspath(self.path))
        self._busy = busy_timeout
        self._worker = _Worker()
        self._conn: sqlite3.Connection | None = None
        self._identity: FileIdentity | None = None

    # --- plumbing ----------------------------------------------------------------------------

    def _connect(self, where: Where) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Several processes may open a brand-new file at once: switching it to WAL can fail
        # with SQLITE_BUSY without SQLite waiting, so the whole first open is retried.
        deadline = time.monotonic() + self._busy
        delay = 0.002
        while True:
            try:
                conn = self._open_once()
                break
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.1)
        identity = FileIdentity.of(self._abs, where)
        if identity is None:
            conn.close()
            raise StoreFileReplacedError(
                f"{where.subject} refused: the file was deleted while it was being opened; "
                "nothing was written. Open the store again."
            )
        self._conn, self._identity = conn, identity
        return conn

    def _open_once(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._abs, isolation_level=None, check_same_thread=False, timeout=self._busy
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={int(self._busy * 1000)}")
            row = conn.execute("PRAGMA journal_mode").fetchone()
            if str(row[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            _migrate(conn, self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def _ready(self, where: Where, *, check: bool = True) -> sqlite3.Connection:
        """The connection, checked: still the opened file, no transaction left over."""
        conn = self._connect(where)
        assert self._identity is not None
        if check:
            self._identity.check(self._abs, where)
        if conn.in_transaction:  # a failed operation (disk full…) may leave one open
            _quietly(conn, "ROLLBACK")
        return conn

    def _guard(self, where: Where, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except sqlite3.Error as exc:
            raise translate(exc, where, self._busy) from exc

    async def _read(self, where: Where, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._worker.submit(lambda: self._guard(where, lambda: fn(self._ready(where))))

    async def _write(self, where: Where, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            conn = self._ready(where, check=False)  # checked under the lock instead
            conn.execute("BEGIN IMMEDIATE")
            try:
                assert self._identity is not None
                self._identity.check(self._abs, where)  # under the lock, before any change
                out = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    _quietly(conn, "ROLLBACK")
                raise
            try:
                self._identity.check(self._abs, where)
            except StoreFileReplacedError as exc:
                raise StoreUnavailableError(
                    f"{where.subject}: the file was deleted or replaced while the write was "
                    "being committed, so the write may be unreadable. Close this store, open "
                    "a new one on the path and reload the session."
                ) from exc
            return out

        return await self._worker.submit(lambda: self._guard(where, run))

    def _where(self, doing: str, session: str | None = None) -> Where:
        return Where(self.path, doing, session)

    async def close(self) -> None:
        """Close the connection and the worker thread."""

        def shut() -> None:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

        if self._conn is not None:
            await self._worker.submit(shut)
        self._worker.stop()

    def session(self, id: str) -> Session:
        return Session(self, id)

    # --- reads -------------------------------------------------------------------------------

    async def load(self, id: str) -> SessionSnapshot:
        validate_session_id(id)
        return await self._read(self._where("loading", id), lambda c: _load(c, id))

    async def turns(self, id: str) -> list[Turn]:
        validate_session_id(id)
        entries = await self._read(
            self._where("reading turns of", id), lambda c: _entries(c, id, 0)
        )
        return [e for e in entries if isinstance(e, Turn)]

    async def total_usage(self, id: str) -> Usage:
        validate_session_id(id)
        where = self._where("summing usage of", id)
        return sum_usage(await self._read(where, lambda c: _entries(c, id, 0)))

    async def list(
        self, *, limit: int = 100, offset: int = 0, suspended: bool | None = None
    ) -> list[SessionInfo]:
        def q(c: sqlite3.Connection) -> list[SessionInfo]:
            sql = "SELECT id, title, created_at, updated_at, turn_count, revision, suspended, "
            sql += "metadata FROM dive_sessions"
            args: list[Any] = []
            if suspended is not None:
                sql += " WHERE suspended = ?"
                args.append(1 if suspended else 0)
            sql += " ORDER BY updated_at DESC, id LIMIT ? OFFSET ?"
            args += [limit, offset]
            return [_info(row) for row in c.execute(sql, args)]

        return await self._read(self._where("listing sessions"), q)

    # --- writes ------------------------------------------------------------------------------

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        validate_session_id(id)
        unstamped = encode_unstamped(turn)
        return await self._write(
            self._where("saving a turn of", id),
            lambda c: _checkpoint(c, id, turn, unstamped, expected_revision),
        )

    async def delete(self, id: str) -> None:
        validate_session_id(id)

        def d(c: sqlite3.Connection) -> None:
            for table in ("dive_entries", "dive_claims"):
                c.execute(f"DELETE FROM {table} WHERE session_id = ?", (id,))
            c.execute("DELETE FROM dive_sessions WHERE id = ?", (id,))

        await self._write(self._where("deleting", id), d)

    async def fork(self, id: str, new_id: str, *, include_open_turn: bool = False) -> int:
        validate_session_id(id)
        validate_session_id(new_id)

        def f(c: sqlite3.Connection) -> int:
            if _revision(c, new_id) != 0:
                raise UserError(f"cannot fork into {new_id!r}: that session already exists")
            copied = fork_entries(_entries(c, id, 0), include_open_turn=include_open_turn)
            for seq, e in enumerate(copied):
                _insert(c, new_id, seq, 1, e)
            return _bump(c, new_id, 0, turns=sum(1 for e in copied if isinstance(e, Turn)))

        return await self._write(self._where(f"forking into {new_id!r}", id), f)

    async def compact(self, id: str, summary: Message) -> int:
        validate_session_id(id)
        if summary.kind != "compaction_summary":
            summary = summary.with_(kind="compaction_summary")

        def f(c: sqlite3.Connection) -> int:
            rev = _revision(c, id)
            entry = Compaction(summary=summary, revision=rev + 1, created_at=datetime.now(UTC))
            _insert(c, id, _next_seq(c, id), rev + 1, entry)
            return _bump(c, id, rev)

        return await self._write(self._where("compacting", id), f)

    async def remove_last_turn(self, id: str, *, expected_revision: int | None = None) -> int:
        validate_session_id(id)

        def f(c: sqlite3.Connection) -> int:
            rev = _revision(c, id)
            last = _head(c, id)
            plan_remove_last(
                last[1] if last else None, expected_revision=expected_revision, revision=rev
            )
            assert last is not None
            c.execute("DELETE FROM dive_entries WHERE session_id = ? AND seq = ?", (id, last[0]))
            return _bump(c, id, rev, turns=-1)

        return await self._write(self._where("removing the last turn of", id), f)

    # --- claims --------------------------------------------------------------------------------

    async def claim(self, id: str, owner: str, ttl: float) -> None:
        validate_session_id(id)
        await self._write(
            self._where("claiming", id), lambda c: _claim(c, id, owner, ttl, renew=False)
        )

    async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
        validate_session_id(id)
        await self._write(
            self._where("renewing the claim on", id),
            lambda c: _claim(c, id, owner, ttl, renew=True),
        )

    async def release_claim(self, id: str, owner: str) -> None:
        validate_session_id(id)

        def r(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM dive_claims WHERE session_id = ? AND owner = ?", (id, owner))

        await self._write(self._where("releasing the claim on", id), r)


class _Worker:
    """One thread that owns the connection; results come back via ``call_soon_threadsafe``.

    Lighter than ``run_in_executor`` (no concurrent future per call), which matters because
    step checkpoints make several writes per model call.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._loop, name="dive-sqlite", daemon=True
                    )
                    self._thread.start()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            fn, loop, fut = item
            try:
                value, error = fn(), None
            except BaseException as exc:
                value, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, fut, value, error)
            except RuntimeError:  # the loop closed while we worked
                pass

    async def submit(self, fn: Callable[[], T]) -> T:
        self._ensure()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[T] = loop.create_future()
        self._queue.put((fn, loop, fut))
        return await fut

    def stop(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None


def _settle(fut: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if fut.cancelled():
        return
    if error is not None:
        fut.set_exception(error)
    else:
        fut.set_result(value)


# --- helpers (run on the worker thread) ----------------------------------------------------------


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS dive_meta (key TEXT PRIMARY KEY, value TEXT)")
        row = conn.execute("SELECT value FROM dive_meta WHERE key = 'schema_version'").fetchone()
        current = int(row[0]) if row else 0
        if current > SCHEMA_VERSION:
            raise UnsupportedSchemaError(
                f"{path} has dive session schema version {current}, newer than this dive "
                f"understands ({SCHEMA_VERSION}); upgrade dive-agents to open it"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO dive_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(version),),
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            _quietly(conn, "ROLLBACK")
        raise


def _quietly(conn: sqlite3.Connection, statement: str) -> None:
    """Run ``statement`` ignoring driver errors (cleanup after an error already raised)."""
    try:
        conn.execute(statement)
    except sqlite3.Error:
        pass


def _revision(conn: sqlite3.Connection, id: str) -> int:
    row = conn.execute("SELECT revision FROM dive_sessions WHERE id = ?", (id,)).fetchone()
    return int(row[0]) if row else 0


def _next_seq(conn: sqlite3.Connection, id: str) -> int:
    row = conn.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM dive_entries WHERE session_id = ?", (id,)
    ).fetchone()
    return int(row[0]) + 1


def _head(conn: sqlite3.Connection, id: str) -> tuple[int, Head] | None:
    row = conn.execute(
        "SELECT seq, kind, turn_id, status, superseded FROM dive_entries WHERE session_id = ? "
        "ORDER BY seq DESC LIMIT 1",
        (id,),
    ).fetchone()
    if row is None:
        return None
    return int(row[0]), Head(str(row[1]), row[2], row[3], bool(row[4]))


def _entries(conn: sqlite3.Connection, id: str, from_seq: int) -> list[Entry]:
    rows = conn.execute(
        "SELECT revision, kind, data FROM dive_entries WHERE session_id = ? AND seq >= ? "
        "ORDER BY seq",
        (id, from_seq),
    ).fetchall()
    return [decode_entry(id, int(r[0]), str(r[1]), r[2]) for r in rows]


def _load(conn: sqlite3.Connection, id: str) -> SessionSnapshot:
    conn.execute("BEGIN")
    try:
        rev = _revision(conn, id)
        if rev == 0:
            return SessionSnapshot()
        row = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) FROM dive_entries WHERE session_id = ? "
            "AND kind = 'compaction'",
            (id,),
        ).fetchone()
        start = int(row[0])
        entries = _entries(conn, id, start)
        snap = snapshot(entries, rev)
        if (
            snap.latest_outcome is None
            and start > 0
            and not any(isinstance(e, Turn) for e in entries)
        ):
            before = _entries(conn, id, 0)[:start]
            earlier = snapshot(before, rev).latest_outcome
            if earlier is not None:
                snap = replace(snap, latest_outcome=earlier)
        return snap
    finally:
        if conn.in_transaction:
            _quietly(conn, "COMMIT")


def _insert(
    conn: sqlite3.Connection,
    id: str,
    seq: int,
    revision: int,
    entry: Entry,
    data: str | None = None,
) -> None:
    is_turn = isinstance(entry, Turn)
    conn.execute(
        "INSERT INTO dive_entries (session_id, seq, revision, kind, turn_id, status, superseded, "
        "data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            id,
            seq,
            revision,
            entry_kind(entry),
            entry.id if is_turn else None,
            entry.status if is_turn else None,
            1 if is_turn and entry.superseded else 0,
            data if data is not None else encode_entry(entry),
        ),
    )


def _bump(
    conn: sqlite3.Connection, id: str, rev: int, *, turns: int = 0, suspended: bool | None = None
) -> int:
    """Advance the revision; ``turns`` is the change in turn count."""
    now = time.time()
    if suspended is None:
        last = conn.execute(
            "SELECT status FROM dive_entries WHERE session_id = ? ORDER BY seq DESC LIMIT 1",
            (id,),
        ).fetchone()
        suspended = last is not None and last[0] == "suspended"
    conn.execute(
        "INSERT INTO dive_sessions (id, revision, created_at, updated_at, turn_count, suspended) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, "
        "updated_at = excluded.updated_at, turn_count = turn_count + excluded.turn_count, "
        "suspended = excluded.suspended",
        (id, rev + 1, now, now, turns, 1 if suspended else 0),
    )
    return rev + 1


def _checkpoint(
    conn: sqlite3.Connection, id: str, turn: Turn, unstamped: str, expected: int
) -> int:
    rev = _revision(conn, id)
    last = _head(conn, id)
    recorded = (
        conn.execute(
            "SELECT 1 FROM dive_entries WHERE session_id = ? AND turn_id = ? LIMIT 1",
            (id, turn.id),
        ).fetchone()
        is not None
    )
    plan = plan_checkpoint_tail(
        last[1] if last else None, recorded, turn, expected_revision=expected, revision=rev
    )
    new_rev = rev + 1
    suspended = plan.turn.status == "suspended"
    if plan.action == "replace":
        assert last is not None
        conn.execute(
            "UPDATE dive_entries SET revision = ?, status = ?, data = ? "
            "WHERE session_id = ? AND seq = ?",
            (new_rev, plan.turn.status, stamp(unstamped, new_rev), id, last[0]),
        )
        return _bump(conn, id, rev, suspended=suspended)
    if plan.supersede and last is not None:
        row = conn.execute(
            "SELECT revision, kind, data FROM dive_entries WHERE session_id = ? AND seq = ?",
            (id, last[0]),
        ).fetchone()
        old = superseded(decode_entry(id, int(row[0]), str(row[1]), row[2]))
        conn.execute(
            "UPDATE dive_entries SET data = ?, superseded = 1 WHERE session_id = ? AND seq = ?",
            (encode_entry(old), id, last[0]),
        )
    data = stamp(unstamped, new_rev)
    _insert(conn, id, (last[0] + 1) if last else 0, new_rev, plan.turn, data)
    return _bump(conn, id, rev, turns=1, suspended=suspended)


def _claim(conn: sqlite3.Connection, id: str, owner: str, ttl: float, *, renew: bool) -> None:
    now = time.time()
    row = conn.execute(
        "SELECT owner, expires_at FROM dive_claims WHERE session_id = ?", (id,)
    ).fetchone()
    if renew:
        if row is None or row[0] != owner or float(row[1]) <= now:
            raise SessionClaimedError(f"the claim of {owner} on session {id!r} was lost")
    elif row is not None and row[0] != owner and float(row[1]) > now:
        raise SessionClaimedError(
            f"session {id!r} is claimed by {row[0]} for another {float(row[1]) - now:.1f} s"
        )
    conn.execute(
        "INSERT INTO dive_claims (session_id, owner, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
        "expires_at = excluded.expires_at",
        (id, owner, now + ttl),
    )


def _info(row: Any) -> SessionInfo:
    meta: dict[str, Any] = json.loads(row[7]) if row[7] else {}
    return SessionInfo(
        id=str(row[0]),
        title=row[1],
        created_at=datetime.fromtimestamp(float(row[2]), UTC),
        updated_at=datetime.fromtimestamp(float(row[3]), UTC),
        turn_count=int(row[4]),
        revision=int(row[5]),
        suspended=bool(row[6]),
        metadata={str(k): str(v) for k, v in meta.items()},
    )
