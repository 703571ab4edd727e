"""Sessions as turn stores: the protocol, the shared log rules and the backends."""

from dive.sessions._memory import MemorySessionStore
from dive.sessions._protocol import (
    Session,
    SessionInfo,
    SessionSnapshot,
    SessionStore,
    validate_session_id,
)
from dive.sessions._sqlite import SQLiteSessionStore

__all__ = [
    "MemorySessionStore",
    "SQLiteSessionStore",
    "Session",
    "SessionInfo",
    "SessionSnapshot",
    "SessionStore",
    "validate_session_id",
]
