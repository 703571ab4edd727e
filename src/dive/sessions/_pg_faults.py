"""What goes wrong under a PostgreSQL store, said in dive's terms.

psycopg errors become ``StoreError`` subclasses that name the DSN (without its password) and
the session; the psycopg error stays the cause. psycopg is imported only when an error is
translated (it is an optional extra).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dive.errors import StoreCorruptedError, StoreError, StoreUnavailableError

__all__ = ["PgWhere", "redact", "translate"]


def redact(dsn: str) -> str:
    """The DSN as ``key=value`` pairs without the password, for messages."""
    from psycopg import Error
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        parts: dict[str, Any] = conninfo_to_dict(dsn)
    except Error:
        return "<a DSN that does not parse>"
    parts.pop("password", None)
    return make_conninfo("", **{k: str(v) for k, v in parts.items()})


@dataclass(frozen=True, slots=True)
class PgWhere:
    """What an operation was doing, for error messages."""

    dsn: str
    doing: str
    session: str | None = None

    @property
    def subject(self) -> str:
        what = f"{self.doing} session {self.session!r}" if self.session else self.doing
        return f"PostgreSQL session store ({self.dsn}): {what}"


def translate(exc: Exception, where: PgWhere) -> StoreError:
    """The ``StoreError`` subclass to raise (``from exc``) for a psycopg error."""
    import psycopg

    head = f"{where.subject} failed ({type(exc).__name__}: {str(exc).strip()})"
    state = getattr(exc, "sqlstate", None) or ""
    if state in ("XX001", "XX002"):  # data_corrupted, index_corrupted
        return StoreCorruptedError(
            f"{head}: the database reports corrupted data; nothing was written. Restore the "
            "database from a backup."
        )
    if state in ("42P01", "42703"):  # undefined_table, undefined_column
        return StoreCorruptedError(
            f"{head}: the dive tables are missing or altered (dropped by hand?); nothing was "
            "written. Restore them from a backup, or point the store at another database."
        )
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailableError(
            f"{head}: the database cannot be reached or dropped the connection; whether a "
            "write landed is unknown. Check that the server is up and reachable, then reload "
            "the session and retry."
        )
    return StoreError(f"{head}: unexpected database error; reload the session and retry.")
