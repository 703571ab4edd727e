"""``open_store``: pick a backend from a path or DSN (SQLite is the embedded default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dive.sessions._sqlite import SQLiteSessionStore

__all__ = ["DEFAULT_PATH", "open_store"]

DEFAULT_PATH = Path("~/.dive/sessions.db")


async def open_store(target: str | Path | None = None) -> Any:
    """A ready store: ``postgresql://…`` → PostgreSQL, anything else → an SQLite file.

    With no target, the SQLite file ``~/.dive/sessions.db`` (what the CLI uses).

    Args:
        target: a ``postgresql://`` DSN, an SQLite file path, or None for ``~/.dive/sessions.db``.
    """
    if isinstance(target, str) and target.startswith(("postgresql://", "postgres://")):  # noqa: ASYNC240
        from dive.sessions._postgres import PostgresSessionStore

        return await PostgresSessionStore(target).open()
    return SQLiteSessionStore(_path(target))


def _path(target: str | Path | None) -> Path:
    return (Path(target) if target is not None else DEFAULT_PATH).expanduser()
