"""Sessions as turn stores: the protocol, the shared log rules and the backends."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from dive.sessions._locks import session_lock
from dive.sessions._memory import MemorySessionStore
from dive.sessions._open import open_store
from dive.sessions._protocol import (
    Session,
    SessionInfo,
    SessionSnapshot,
    SessionStore,
    validate_session_id,
)
from dive.sessions._sqlite import SQLiteSessionStore

if _TYPE_CHECKING:
    from dive.sessions._postgres import PostgresSessionStore


def __getattr__(name: str) -> object:
    # PostgresSessionStore needs the optional psycopg extra; import it only when asked for.
    if name == "PostgresSessionStore":
        from dive._public import publish
        from dive.sessions._postgres import PostgresSessionStore

        publish(__name__, {name: PostgresSessionStore}, [name])
        return PostgresSessionStore
    raise AttributeError(name)


__all__ = [
    "PostgresSessionStore",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "Session",
    "SessionInfo",
    "SessionSnapshot",
    "SessionStore",
    "open_store",
    "session_lock",
    "validate_session_id",
]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
