"""``SQLiteSessionStore``: the embedded default.

Stdlib ``sqlite3`` in WAL mode, every operation on one worker thread (off the event loop), one
``BEGIN IMMEDIATE`` transaction per write, so several processes can share one file. The schema
is versioned; a newer version than this code knows refuses to open. Claims are rows with an
owner and a wall-clock expiry.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from dive.errors import (
    StoreFileReplacedError,
    StoreUnavailableError,
    UserError,
)
from dive.llm import Usage
from dive.messages import Message
from dive.sessions._codec import (
    encode_entry,
    encode_unstamped,
    entry_kind,
    stamp,
)
from dive.sessions._log import (
    Entry,
    Head,
    compaction_entry,
    fork_entries,
    plan_checkpoint_tail,
    plan_compact,
    plan_remove_last,
    snapshot,
    sum_usage,
    superseded,
)
from dive.sessions._protocol import Session, SessionInfo, SessionSnapshot, validate_session_id
from dive.sessions._sqlite_claims import claim_row
from dive.sessions._sqlite_faults import FileIdentity, Where, is_busy, translate
from dive.sessions._sqlite_inline import INLINE_RECORD_CHARS, InlineWriter
from dive.sessions._sqlite_schema import SCHEMA_VERSION, migrate
from dive.sessions._sqlite_worker import Worker
from dive.sessions._steps import Delta, Written, decode_row, delta
from dive.turns import Turn

__all__ = ["SCHEMA_VERSION", "SQLiteSessionStore"]

T = TypeVar("T")

_SYNCHRONOUS = ("normal", "full")


class SQLiteSessionStore:
    """Sessions in one SQLite file (``":memory:"`` is refused: use ``MemorySessionStore``).

    Args:
        path: the database file; created (with its folder) on first use.
        busy_timeout: seconds to wait for another connection's lock before failing with
            ``StoreUnavailableError``.
        synchronous: ``"normal"`` (the default: a committed write survives a crash of the
            process, and the last writes may be lost on power loss or an OS crash) or
            ``"full"`` (every commit is synced to disk: survives power loss, each write is
            slower). SQLite's ``PRAGMA synchronous`` in WAL mode.

    Step checkpoints of a running turn are appended as small step rows (what the step added)
    and folded into the turn's record when it is written with another status.

    Every failure is a ``StoreError`` subclass naming the file and the session. The file's
    identity is checked before every operation: if it was deleted or replaced while open,
    the store refuses (``StoreFileReplacedError``) instead of writing into a file nobody can
    read.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 10.0,
        synchronous: Literal["normal", "full"] = "normal",
    ) -> None:
        if str(path) == ":memory:":
            raise UserError("SQLiteSessionStore needs a file path; use MemorySessionStore instead")
        if synchronous not in _SYNCHRONOUS:
            raise UserError(
                f"SQLiteSessionStore(synchronous={synchronous!r}) is not supported: use "
                '"normal" (the default) or "full" (power-loss safe, slower writes)'
            )
        self.synchronous = synchronous
        self._written: dict[str, Written] = {}
        self.path = Path(path)
        self._abs = Path(os.path.abspath(self.path))
        self._busy = busy_timeout
        self._worker = Worker()
        self._conn: sqlite3.Connection | None = None
        self._inline = (
            InlineWriter(self._abs, self._worker, lambda: self._conn)
            if synchronous == "normal"
            else None
        )
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
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            migrate(conn, self.path)
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

    async def _quick_read(self, where: Where, fn: Callable[[sqlite3.Connection], T]) -> T:
        """A read on the caller's thread when it need not wait (see ``_small_write``)."""
        if self._inline is not None and self._conn is not None:
            inline = self._inline
            identity = self._identity
            assert identity is not None

            def read(c: sqlite3.Connection) -> T:
                identity.check(self._abs, where)
                return fn(c)

            done, out = self._guard(where, lambda: inline.try_read(read))
            if done:
                return cast(T, out)
        return await self._read(where, fn)

    def _transact(
        self, conn: sqlite3.Connection, where: Where, fn: Callable[[sqlite3.Connection], T]
    ) -> T:
        """One write transaction on ``conn``, the file's identity checked under the lock."""
        if conn.in_transaction:  # a failed operation (disk full…) may leave one open
            _quietly(conn, "ROLLBACK")
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

    async def _write(self, where: Where, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            return self._transact(self._ready(where, check=False), where, fn)

        return await self._worker.submit(lambda: self._guard(where, run))

    async def _small_write(self, where: Where, fn: Callable[[sqlite3.Connection], T]) -> T:
        """A write of a few rows: inline when it cannot wait on a lock, else on the worker."""
        if self._inline is not None and self._conn is not None:
            inline = self._inline
            done, out = self._guard(
                where, lambda: inline.try_write(lambda c: self._transact(c, where, fn))
            )
            if done:
                return cast(T, out)
        return await self._write(where, fn)

    def _where(self, doing: str, session: str | None = None) -> Where:
        return Where(self.path, doing, session)

    async def close(self) -> None:
        """Close the connection and the worker thread."""

        def shut() -> None:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

        if self._inline is not None:
            self._inline.close()
        if self._conn is not None:
            await self._worker.submit(shut)
        self._worker.stop()

    def session(self, id: str) -> Session:
        return Session(self, id)

    # --- reads -------------------------------------------------------------------------------

    async def load(self, id: str) -> SessionSnapshot:
        validate_session_id(id)
        return await self._quick_read(self._where("loading", id), lambda c: _load(c, id))

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
        step = delta(self._written.pop(id, None), turn)
        if step is not None and step.base.revision == expected_revision:
            where = self._where("saving a step of", id)
            append = step
            revision = await self._small_write(where, lambda c: _append_step(c, id, append))
            if revision is not None:
                self._written[id] = step.written(revision, turn)
                return revision
            step = None  # another writer moved the session on: the full path decides
        unstamped = None if step is not None else encode_unstamped(turn)
        # a record of ordinary size is written inline too (see ``_small_write``)
        small = unstamped is not None and len(unstamped) <= INLINE_RECORD_CHARS
        write = self._small_write if small else self._write
        revision, written = await write(
            self._where("saving a turn of", id),
            lambda c: _checkpoint(c, id, turn, step, unstamped, expected_revision),
        )
        if written is not None:
            self._written[id] = written
        return revision

    async def delete(self, id: str) -> None:
        validate_session_id(id)

        self._written.pop(id, None)

        def d(c: sqlite3.Connection) -> None:
            for table in ("dive_entries", "dive_steps", "dive_claims"):
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

    async def compact(
        self,
        id: str,
        summary: Message,
        *,
        head: Sequence[Message] = (),
        tail: Sequence[Message] = (),
    ) -> int:
        validate_session_id(id)

        def f(c: sqlite3.Connection) -> int:
            rev = _revision(c, id)
            last = _head(c, id)
            plan_compact(last[1] if last is not None else None)
            entry = compaction_entry(summary, head=head, tail=tail, revision=rev + 1)
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
            _drop_steps(c, id, last[0])
            return _bump(c, id, rev, turns=-1)

        self._written.pop(id, None)
        return await self._write(self._where("removing the last turn of", id), f)

    # --- claims --------------------------------------------------------------------------------

    async def claim(self, id: str, owner: str, ttl: float) -> None:
        validate_session_id(id)
        await self._write(
            self._where("claiming", id), lambda c: claim_row(c, id, owner, ttl, renew=False)
        )

    async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
        validate_session_id(id)
        await self._write(
            self._where("renewing the claim on", id),
            lambda c: claim_row(c, id, owner, ttl, renew=True),
        )

    async def release_claim(self, id: str, owner: str) -> None:
        validate_session_id(id)

        def r(c: sqlite3.Connection) -> None:
            c.execute("DELETE FROM dive_claims WHERE session_id = ? AND owner = ?", (id, owner))

        await self._write(self._where("releasing the claim on", id), r)


# --- helpers (run on the worker thread) ----------------------------------------------------------


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
    """The entries from ``from_seq`` on, each with its step rows applied."""
    rows = conn.execute(
        "SELECT seq, revision, kind, data FROM dive_entries WHERE session_id = ? AND seq >= ? "
        "ORDER BY seq",
        (id, from_seq),
    ).fetchall()
    steps: dict[int, list[tuple[int, str]]] = {}
    for seq, rev, data in conn.execute(
        "SELECT seq, revision, data FROM dive_steps WHERE session_id = ? AND seq >= ? "
        "ORDER BY seq, step",
        (id, from_seq),
    ):
        steps.setdefault(int(seq), []).append((int(rev), str(data)))
    return [decode_row(id, int(r[1]), str(r[2]), r[3], steps.get(int(r[0]), ())) for r in rows]


def _drop_steps(conn: sqlite3.Connection, id: str, seq: int) -> None:
    conn.execute("DELETE FROM dive_steps WHERE session_id = ? AND seq = ?", (id, seq))


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
    conn: sqlite3.Connection,
    id: str,
    turn: Turn,
    step: Delta | None,
    unstamped: str | None,
    expected: int,
) -> tuple[int, Written | None]:
    """One checkpoint transaction: a step row when ``step`` still applies, else the record."""
    rev = _revision(conn, id)
    last = _head(conn, id)
    head = last[1] if last else None
    mine = head is not None and head.is_open and head.turn_id == turn.id
    recorded = mine or (
        conn.execute(
            "SELECT 1 FROM dive_entries WHERE session_id = ? AND turn_id = ? LIMIT 1",
            (id, turn.id),
        ).fetchone()
        is not None
    )
    plan = plan_checkpoint_tail(head, recorded, turn, expected_revision=expected, revision=rev)
    new_rev = rev + 1
    suspended = plan.turn.status == "suspended"
    if plan.action == "replace":
        assert last is not None
        seq = last[0]
        if step is not None and step.base.revision == rev and step.base.seq == seq:
            conn.execute(
                "INSERT INTO dive_steps (session_id, seq, step, revision, data) "
                "VALUES (?, ?, ?, ?, ?)",
                (id, seq, step.base.steps + 1, new_rev, step.data),
            )
            return _bump(conn, id, rev, suspended=False), step.written(new_rev, turn)
        data = stamp(unstamped if unstamped is not None else encode_unstamped(turn), new_rev)
        conn.execute(
            "UPDATE dive_entries SET revision = ?, status = ?, data = ? "
            "WHERE session_id = ? AND seq = ?",
            (new_rev, plan.turn.status, data, id, seq),
        )
        _drop_steps(conn, id, seq)
        return _bump(conn, id, rev, suspended=suspended), Written.after(seq, turn, new_rev, 0)
    if plan.supersede and last is not None:
        old = superseded(_entries(conn, id, last[0])[0])
        conn.execute(
            "UPDATE dive_entries SET data = ?, superseded = 1 WHERE session_id = ? AND seq = ?",
            (encode_entry(old), id, last[0]),
        )
        _drop_steps(conn, id, last[0])
    data = stamp(unstamped if unstamped is not None else encode_unstamped(turn), new_rev)
    seq = (last[0] + 1) if last else 0
    _insert(conn, id, seq, new_rev, plan.turn, data)
    new = _bump(conn, id, rev, turns=1, suspended=suspended)
    return new, Written.after(seq, turn, new_rev, 0)


def _append_step(conn: sqlite3.Connection, id: str, step: Delta) -> int | None:
    """Append ``step`` if the session is still where this store left it; else None.

    The revision advances on every write, so an unchanged revision means the open turn and
    its row are exactly as last written here.
    """
    base = step.base
    moved = conn.execute(
        "UPDATE dive_sessions SET revision = ?, updated_at = ?, suspended = 0 "
        "WHERE id = ? AND revision = ?",
        (base.revision + 1, time.time(), id, base.revision),
    )
    if moved.rowcount != 1:
        return None
    conn.execute(
        "INSERT INTO dive_steps (session_id, seq, step, revision, data) VALUES (?, ?, ?, ?, ?)",
        (id, base.seq, base.steps + 1, base.revision + 1, step.data),
    )
    return base.revision + 1


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
