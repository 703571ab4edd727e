"""``dive sessions list|show ID|fork ID [NEW_ID]|rm ID`` over the SQLite sessions file."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

from dive.cli._console import make_console
from dive.cli._errors import EXIT_USAGE, CliError
from dive.cli._pick import new_session_id, session_exists
from dive.cli._transcript import print_transcript
from dive.errors import UserError
from dive.messages.codec import to_jsonable
from dive.sessions import SQLiteSessionStore, validate_session_id

__all__ = ["fork_session", "list_sessions", "remove_session", "show_session"]


def _exists(db: Path) -> bool:
    return db.exists()


@asynccontextmanager
async def _store(db: Path) -> AsyncGenerator[SQLiteSessionStore]:
    if not _exists(db):
        raise CliError(f"no sessions file at {db} yet (dive chat or dive run creates it)")
    store = SQLiteSessionStore(db)
    try:
        yield store
    finally:
        await store.close()


async def _existing(store: SQLiteSessionStore, session_id: str, db: Path) -> str:
    try:
        validate_session_id(session_id)
    except UserError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if not await session_exists(store, session_id):
        raise CliError(f"no session {session_id} in {db}; `dive sessions list` shows them")
    return session_id


async def list_sessions(db: Path, *, limit: int = 20, as_json: bool = False) -> None:
    """Print the sessions, most recently updated first."""
    from rich.table import Table

    console = make_console()
    if not _exists(db):
        if not as_json:
            console.print(f"no sessions yet ({db} does not exist)")
        return
    async with _store(db) as store:
        rows = await store.list(limit=limit)
    if as_json:
        for row in rows:
            console.out(json.dumps(to_jsonable(row), ensure_ascii=False), highlight=False)
        return
    if not rows:
        console.print(f"no sessions in {db}")
        return
    table = Table("id", "updated", "turns", "state", box=None, pad_edge=False)
    for row in rows:
        updated = row.updated_at.strftime("%Y-%m-%d %H:%M") if row.updated_at else ""
        table.add_row(row.id, updated, str(row.turn_count), "suspended" if row.suspended else "")
    console.print(table)


async def show_session(db: Path, session_id: str, *, as_json: bool = False) -> None:
    """Print a session's conversation, or its turn records as JSON."""
    console = make_console()
    async with _store(db) as store:
        await _existing(store, session_id, db)
        turns = await store.turns(session_id)
    if as_json:
        for turn in turns:
            console.out(turn.to_json(), highlight=False)
        return
    print_transcript(console, turns)


async def fork_session(db: Path, session_id: str, new_id: str | None = None) -> None:
    """Copy a session under ``new_id`` (a fresh id when None) and print the new id."""
    async with _store(db) as store:
        await _existing(store, session_id, db)
        target = new_id or new_session_id()
        try:
            validate_session_id(target)
        except UserError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
        if await session_exists(store, target):
            raise CliError(f"a session {target} already exists; pick another id", EXIT_USAGE)
        await store.fork(session_id, target)
    make_console().out(target, highlight=False)


async def remove_session(db: Path, session_id: str) -> None:
    """Delete a session."""
    async with _store(db) as store:
        await _existing(store, session_id, db)
        await store.delete(session_id)
    make_console().out(f"removed {session_id}", highlight=False)
