"""``PostgresSessionStore``: sessions shared across processes and hosts.

psycopg 3 async with a connection pool (``dive-agents[postgres]``). Every write is one
transaction that locks the session row (``SELECT … FOR UPDATE``), so concurrent writers
serialize and a stale ``expected_revision`` is refused. The schema is versioned and migrated
under an advisory lock; a newer version than this code knows refuses to open. Claims are lease
rows timed by the database clock.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, LiteralString

from dive.errors import MissingExtraError, SessionClaimedError, UnsupportedSchemaError, UserError
from dive.llm import Usage
from dive.messages import Message
from dive.sessions._claimant import current, gone
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
from dive.sessions._pg_faults import PgWhere, redact, translate
from dive.sessions._pg_steps import StepBatcher
from dive.sessions._protocol import Session, SessionInfo, SessionSnapshot, validate_session_id
from dive.sessions._sqlite_claims import held_text
from dive.sessions._steps import Delta, Written, decode_row, delta
from dive.turns import Turn

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["SCHEMA_VERSION", "PostgresSessionStore"]

SCHEMA_VERSION = 3
_LOCK_KEY = 0x64697665  # "dive"

_MIGRATIONS: dict[int, list[LiteralString]] = {
    1: [
        """CREATE TABLE dive_sessions (
            id TEXT PRIMARY KEY,
            revision BIGINT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            title TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            turn_count INTEGER NOT NULL DEFAULT 0,
            suspended BOOLEAN NOT NULL DEFAULT FALSE
        )""",
        """CREATE TABLE dive_entries (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            revision BIGINT NOT NULL,
            kind TEXT NOT NULL,
            turn_id TEXT,
            status TEXT,
            superseded BOOLEAN NOT NULL DEFAULT FALSE,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX dive_entries_turn ON dive_entries (session_id, turn_id)",
        """CREATE TABLE dive_claims (
            session_id TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
    ],
    2: [
        # Left over only when the rest of the schema was dropped: its rows belong to no entry.
        "DROP TABLE IF EXISTS dive_steps",
        """CREATE TABLE dive_steps (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            step INTEGER NOT NULL,
            revision BIGINT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq, step)
        )""",
    ],
    3: [  # the host and pid of each claim's process
        "ALTER TABLE dive_claims ADD COLUMN IF NOT EXISTS host TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE dive_claims ADD COLUMN IF NOT EXISTS pid INTEGER NOT NULL DEFAULT 0",
    ],
}

_NOW = "extract(epoch from clock_timestamp())"


class PostgresSessionStore:
    """Sessions in PostgreSQL. Call ``await store.open()`` (or use ``async with``) first.

    Step checkpoints of a running turn are appended as small step rows (what the step added)
    and folded into the turn's record when it is written with another status.
    """

    def __init__(
        self, dsn: str, *, min_size: int = 1, max_size: int = 10, timeout: float = 30.0
    ) -> None:
        """Create the store (no connection yet: call ``open()``).

        Args:
            dsn: a libpq connection string or ``postgresql://`` URL.
            min_size: connections the pool keeps open.
            max_size: most connections the pool opens.
            timeout: seconds to wait for a connection, at ``open()`` and per operation,
                before failing with ``StoreUnavailableError``.
        """
        try:
            import psycopg
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingExtraError(
                "PostgresSessionStore needs psycopg: pip install 'dive-agents[postgres]'"
            ) from exc
        self.dsn = dsn
        self._shown = redact(dsn)
        self._error: type[Exception] = psycopg.Error
        self._pool_class = AsyncConnectionPool
        self._sizes = (min_size, max_size, timeout)
        self._pool: AsyncConnectionPool = self._new_pool()
        self._opened = False
        self._written: dict[str, Written] = {}
        self._steps = StepBatcher(lambda session: self._use("saving a step of", session))

    def _new_pool(self) -> AsyncConnectionPool:
        min_size, max_size, timeout = self._sizes
        return self._pool_class(
            self.dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            open=False,
            kwargs={"autocommit": True},
        )

    async def open(self) -> PostgresSessionStore:
        """Open the pool and migrate the schema.

        Raises:
            StoreUnavailableError: the server could not be reached within ``timeout``.
            UnsupportedSchemaError: the database was written by a newer dive.
        """
        if not self._opened:
            try:
                await self._pool.open(wait=True, timeout=self._sizes[2])
                async with self._pool.connection() as conn, conn.transaction():
                    await _migrate(conn)
            except BaseException as exc:
                await self._pool.close()
                self._pool = self._new_pool()  # a closed pool cannot be opened again
                if isinstance(exc, self._error):
                    raise translate(exc, self._where("opening")) from exc
                raise
            self._opened = True
        return self

    async def close(self) -> None:
        """Close the pool."""
        if self._opened:
            await self._pool.close()
            self._opened = False

    async def __aenter__(self) -> PostgresSessionStore:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def session(self, id: str) -> Session:
        return Session(self, id)

    def _where(self, doing: str, session: str | None = None) -> PgWhere:
        return PgWhere(self._shown, doing, session)

    @asynccontextmanager
    async def _use(
        self, doing: str, session: str | None = None, *, transaction: bool = False
    ) -> AsyncGenerator[AsyncConnection[Any]]:
        """A pooled connection (in a transaction if asked); psycopg errors translated."""
        if not self._opened:
            raise UserError("PostgresSessionStore is not open: await store.open() first")
        try:
            async with self._pool.connection() as conn:
                if transaction:
                    async with conn.transaction():
                        yield conn
                else:
                    yield conn
        except self._error as exc:
            raise translate(exc, self._where(doing, session)) from exc

    # --- reads -------------------------------------------------------------------------------

    async def load(self, id: str) -> SessionSnapshot:
        validate_session_id(id)
        async with self._use("loading", id, transaction=True) as conn:
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rev = await _revision(conn, id)
            if rev == 0:
                return SessionSnapshot()
            cur = await conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM dive_entries WHERE session_id = %s "
                "AND kind = 'compaction'",
                (id,),
            )
            row = await cur.fetchone()
            start = int(row[0]) if row else 0
            entries = await _entries(conn, id, start)
            snap = snapshot(entries, rev)
            if (
                snap.latest_outcome is None
                and start > 0
                and not any(isinstance(e, Turn) for e in entries)
            ):
                earlier = snapshot((await _entries(conn, id, 0))[:start], rev).latest_outcome
                if earlier is not None:
                    snap = replace(snap, latest_outcome=earlier)
            return snap

    async def turns(self, id: str) -> list[Turn]:
        validate_session_id(id)
        async with self._use("reading turns of", id) as conn:
            return [e for e in await _entries(conn, id, 0) if isinstance(e, Turn)]

    async def total_usage(self, id: str) -> Usage:
        validate_session_id(id)
        async with self._use("summing usage of", id) as conn:
            return sum_usage(await _entries(conn, id, 0))

    async def list(
        self, *, limit: int = 100, offset: int = 0, suspended: bool | None = None
    ) -> list[SessionInfo]:
        sql = (
            "SELECT id, title, created_at, updated_at, turn_count, revision, suspended, metadata "
            "FROM dive_sessions"
        )
        args: list[Any] = []
        if suspended is not None:
            sql += " WHERE suspended = %s"
            args.append(suspended)
        sql += " ORDER BY updated_at DESC, id LIMIT %s OFFSET %s"
        args += [limit, offset]
        async with self._use("listing sessions") as conn:
            cur = await conn.execute(sql, args)
            return [_info(row) for row in await cur.fetchall()]

    # --- writes ------------------------------------------------------------------------------

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        validate_session_id(id)
        step = delta(self._written.pop(id, None), turn)
        if step is not None and step.base.revision == expected_revision:
            appended = await self._steps.append(id, step)
            if appended is not None:
                self._written[id] = step.written(appended, turn)
                return appended
            step = None  # another writer moved the session on: the full path decides
        unstamped = None if step is not None else encode_unstamped(turn)
        async with self._use("saving a turn of", id, transaction=True) as conn:
            rev, written = await _checkpoint(conn, id, turn, step, unstamped, expected_revision)
        if written is not None:
            self._written[id] = written
        return rev

    async def delete(self, id: str) -> None:
        validate_session_id(id)
        self._written.pop(id, None)
        async with self._use("deleting", id, transaction=True) as conn:
            for table in ("dive_entries", "dive_steps", "dive_claims"):
                await conn.execute(f"DELETE FROM {table} WHERE session_id = %s", (id,))
            await conn.execute("DELETE FROM dive_sessions WHERE id = %s", (id,))

    async def fork(self, id: str, new_id: str, *, include_open_turn: bool = False) -> int:
        validate_session_id(id)
        validate_session_id(new_id)
        doing = f"forking into {new_id!r}"
        async with self._use(doing, id, transaction=True) as conn:
            rev = await _lock(conn, new_id)
            if rev != 0:
                raise UserError(f"cannot fork into {new_id!r}: that session already exists")
            copied = fork_entries(await _entries(conn, id, 0), include_open_turn=include_open_turn)
            for seq, e in enumerate(copied):
                await _insert(conn, new_id, seq, 1, e)
            turns = sum(1 for e in copied if isinstance(e, Turn))
            return await _bump(conn, new_id, 0, turns=turns)

    async def compact(
        self,
        id: str,
        summary: Message,
        *,
        head: Sequence[Message] = (),
        tail: Sequence[Message] = (),
    ) -> int:
        validate_session_id(id)
        async with self._use("compacting", id, transaction=True) as conn:
            rev = await _lock(conn, id)
            last = await _head(conn, id)
            plan_compact(last[1] if last is not None else None)
            entry = compaction_entry(summary, head=head, tail=tail, revision=rev + 1)
            await _insert(conn, id, (last[0] + 1) if last else 0, rev + 1, entry)
            return await _bump(conn, id, rev)

    async def remove_last_turn(self, id: str, *, expected_revision: int | None = None) -> int:
        validate_session_id(id)
        doing = "removing the last turn of"
        async with self._use(doing, id, transaction=True) as conn:
            rev = await _lock(conn, id)
            last = await _head(conn, id)
            plan_remove_last(
                last[1] if last else None, expected_revision=expected_revision, revision=rev
            )
            assert last is not None
            await conn.execute(
                "DELETE FROM dive_entries WHERE session_id = %s AND seq = %s", (id, last[0])
            )
            await _drop_steps(conn, id, last[0])
            self._written.pop(id, None)
            return await _bump(conn, id, rev, turns=-1)

    # --- claims ------------------------------------------------------------------------------

    async def claim(self, id: str, owner: str, ttl: float) -> None:
        await self._claim(id, owner, ttl, renew=False)

    async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
        await self._claim(id, owner, ttl, renew=True)

    async def _claim(self, id: str, owner: str, ttl: float, *, renew: bool) -> None:
        validate_session_id(id)
        doing = "renewing the claim on" if renew else "claiming"
        async with self._use(doing, id, transaction=True) as conn:
            await conn.execute(
                "INSERT INTO dive_claims (session_id, owner, expires_at) VALUES (%s, '', 0) "
                "ON CONFLICT (session_id) DO NOTHING",
                (id,),
            )
            cur = await conn.execute(
                f"SELECT owner, expires_at, {_NOW}, host, pid FROM dive_claims "
                "WHERE session_id = %s FOR UPDATE",
                (id,),
            )
            row = await cur.fetchone()
            assert row is not None
            held_by, expires, now = str(row[0]), float(row[1]), float(row[2])
            live = held_by != "" and expires > now
            if renew and not (live and held_by == owner):
                raise SessionClaimedError(f"the claim of {owner} on session {id!r} was lost")
            if not renew and live and held_by != owner:
                host, pid = str(row[3]), int(row[4])
                if not gone(host, pid):
                    raise SessionClaimedError(held_text(id, held_by, host, pid, expires - now))
            host, pid = current()
            await conn.execute(
                f"UPDATE dive_claims SET owner = %s, expires_at = {_NOW} + %s, host = %s, "
                "pid = %s WHERE session_id = %s",
                (owner, ttl, host, pid, id),
            )

    async def release_claim(self, id: str, owner: str) -> None:
        validate_session_id(id)
        async with self._use("releasing the claim on", id) as conn:
            await conn.execute(
                "DELETE FROM dive_claims WHERE session_id = %s AND owner = %s", (id, owner)
            )


# --- helpers ---------------------------------------------------------------------------------


async def _migrate(conn: AsyncConnection[Any]) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
    await conn.execute("CREATE TABLE IF NOT EXISTS dive_meta (key TEXT PRIMARY KEY, value TEXT)")
    cur = await conn.execute("SELECT value FROM dive_meta WHERE key = 'schema_version'")
    row = await cur.fetchone()
    current = int(row[0]) if row else 0
    if current > SCHEMA_VERSION:
        raise UnsupportedSchemaError(
            f"the database has dive session schema version {current}, newer than this dive "
            f"understands ({SCHEMA_VERSION}); upgrade dive-agents to open it"
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        for statement in _MIGRATIONS[version]:
            await conn.execute(statement)
        await conn.execute(
            "INSERT INTO dive_meta (key, value) VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(version),),
        )


async def _revision(conn: AsyncConnection[Any], id: str) -> int:
    cur = await conn.execute("SELECT revision FROM dive_sessions WHERE id = %s", (id,))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _lock(conn: AsyncConnection[Any], id: str) -> int:
    """Lock the session row (creating it at revision 0) and return its revision."""
    await conn.execute(
        "INSERT INTO dive_sessions (id, revision, created_at, updated_at) "
        f"VALUES (%s, 0, {_NOW}, {_NOW}) ON CONFLICT (id) DO NOTHING",
        (id,),
    )
    cur = await conn.execute("SELECT revision FROM dive_sessions WHERE id = %s FOR UPDATE", (id,))
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def _head(conn: AsyncConnection[Any], id: str) -> tuple[int, Head] | None:
    cur = await conn.execute(
        "SELECT seq, kind, turn_id, status, superseded FROM dive_entries WHERE session_id = %s "
        "ORDER BY seq DESC LIMIT 1",
        (id,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return int(row[0]), Head(str(row[1]), row[2], row[3], bool(row[4]))


async def _supersede(conn: AsyncConnection[Any], id: str, seq: int) -> None:
    old = superseded((await _entries(conn, id, seq))[0])
    await conn.execute(
        "UPDATE dive_entries SET data = %s, superseded = TRUE WHERE session_id = %s AND seq = %s",
        (encode_entry(old), id, seq),
    )
    await _drop_steps(conn, id, seq)


async def _drop_steps(conn: AsyncConnection[Any], id: str, seq: int) -> None:
    await conn.execute("DELETE FROM dive_steps WHERE session_id = %s AND seq = %s", (id, seq))


async def _entries(conn: AsyncConnection[Any], id: str, from_seq: int) -> list[Entry]:
    """The entries from ``from_seq`` on, each with its step rows applied."""
    cur = await conn.execute(
        "SELECT seq, revision, kind, data FROM dive_entries WHERE session_id = %s AND seq >= %s "
        "ORDER BY seq",
        (id, from_seq),
    )
    rows = await cur.fetchall()
    cur = await conn.execute(
        "SELECT seq, revision, data FROM dive_steps WHERE session_id = %s AND seq >= %s "
        "ORDER BY seq, step",
        (id, from_seq),
    )
    steps: dict[int, list[tuple[int, str]]] = {}
    for seq, rev, data in await cur.fetchall():
        steps.setdefault(int(seq), []).append((int(rev), str(data)))
    return [decode_row(id, int(r[1]), str(r[2]), r[3], steps.get(int(r[0]), ())) for r in rows]


async def _checkpoint(
    conn: AsyncConnection[Any],
    id: str,
    turn: Turn,
    step: Delta | None,
    unstamped: str | None,
    expected: int,
) -> tuple[int, Written | None]:
    """One checkpoint transaction: a step row when ``step`` still applies, else the record."""
    rev = await _lock(conn, id)
    last = await _head(conn, id)
    head = last[1] if last else None
    recorded = head is not None and head.is_open and head.turn_id == turn.id
    if not recorded:
        cur = await conn.execute(
            "SELECT 1 FROM dive_entries WHERE session_id = %s AND turn_id = %s LIMIT 1",
            (id, turn.id),
        )
        recorded = await cur.fetchone() is not None
    plan = plan_checkpoint_tail(head, recorded, turn, expected_revision=expected, revision=rev)
    new_rev = rev + 1
    suspended = plan.turn.status == "suspended"
    if plan.action == "replace":
        assert last is not None
        seq = last[0]
        if step is not None and step.base.revision == rev and step.base.seq == seq:
            await conn.execute(
                "INSERT INTO dive_steps (session_id, seq, step, revision, data) "
                "VALUES (%s, %s, %s, %s, %s)",
                (id, seq, step.base.steps + 1, new_rev, step.data),
            )
            return await _bump(conn, id, rev, suspended=False), step.written(new_rev, turn)
        data = stamp(unstamped if unstamped is not None else encode_unstamped(turn), new_rev)
        await conn.execute(
            "UPDATE dive_entries SET revision = %s, status = %s, data = %s "
            "WHERE session_id = %s AND seq = %s",
            (new_rev, plan.turn.status, data, id, seq),
        )
        await _drop_steps(conn, id, seq)
        new = await _bump(conn, id, rev, suspended=suspended)
        return new, Written.after(seq, turn, new_rev, 0)
    if plan.supersede and last is not None:
        await _supersede(conn, id, last[0])
    data = stamp(unstamped if unstamped is not None else encode_unstamped(turn), new_rev)
    seq = (last[0] + 1) if last else 0
    await _insert(conn, id, seq, new_rev, plan.turn, data)
    new = await _bump(conn, id, rev, turns=1, suspended=suspended)
    return new, Written.after(seq, turn, new_rev, 0)


async def _insert(
    conn: AsyncConnection[Any],
    id: str,
    seq: int,
    revision: int,
    entry: Entry,
    data: str | None = None,
) -> None:
    is_turn = isinstance(entry, Turn)
    await conn.execute(
        "INSERT INTO dive_entries (session_id, seq, revision, kind, turn_id, status, superseded, "
        "data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (
            id,
            seq,
            revision,
            entry_kind(entry),
            entry.id if is_turn else None,
            entry.status if is_turn else None,
            is_turn and entry.superseded,
            data if data is not None else encode_entry(entry),
        ),
    )


async def _bump(
    conn: AsyncConnection[Any], id: str, rev: int, *, turns: int = 0, suspended: bool | None = None
) -> int:
    """Advance the revision; ``turns`` is the change in turn count."""
    if suspended is None:
        cur = await conn.execute(
            "SELECT status FROM dive_entries WHERE session_id = %s ORDER BY seq DESC LIMIT 1",
            (id,),
        )
        row = await cur.fetchone()
        suspended = row is not None and row[0] == "suspended"
    await conn.execute(
        f"UPDATE dive_sessions SET revision = %s, updated_at = {_NOW}, "
        "turn_count = turn_count + %s, suspended = %s WHERE id = %s",
        (rev + 1, turns, suspended, id),
    )
    return rev + 1


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
