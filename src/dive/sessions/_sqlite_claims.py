"""Session claims in SQLite: one row per session with an owner and a wall-clock expiry."""

from __future__ import annotations

import sqlite3
import time

from dive.errors import SessionClaimedError

__all__ = ["claim_row"]


def claim_row(conn: sqlite3.Connection, id: str, owner: str, ttl: float, *, renew: bool) -> None:
    """Take (or with ``renew``, keep) the claim; ``SessionClaimedError`` if another owns it."""
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
