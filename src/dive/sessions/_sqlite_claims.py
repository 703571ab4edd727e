"""Session claims in SQLite: one row per session with an owner, its host and pid, and expiry.

The expiry is wall-clock time. A live claim of a process that is gone, recorded on this host,
is taken over at once (``dive.sessions._claimant.gone``).
"""

from __future__ import annotations

import sqlite3
import time

from dive.errors import SessionClaimedError
from dive.sessions._claimant import current, gone

__all__ = ["claim_row", "held_text"]


def held_text(id: str, owner: str, host: str, pid: int, left: float) -> str:
    """The ``SessionClaimedError`` text for a claim another owner holds."""
    where = f" (host {host}, pid {pid})" if host else ""
    return (
        f"session {id!r} is claimed by {owner}{where} for another {left:.1f} s; it is free "
        "when that owner releases it or its claim expires (at once if that process is gone "
        "and was on this host)"
    )


def claim_row(conn: sqlite3.Connection, id: str, owner: str, ttl: float, *, renew: bool) -> None:
    """Take (or with ``renew``, keep) the claim; ``SessionClaimedError`` if another owns it."""
    now = time.time()
    row = conn.execute(
        "SELECT owner, expires_at, host, pid FROM dive_claims WHERE session_id = ?", (id,)
    ).fetchone()
    if renew:
        if row is None or row[0] != owner or float(row[1]) <= now:
            raise SessionClaimedError(f"the claim of {owner} on session {id!r} was lost")
    elif row is not None and row[0] != owner and float(row[1]) > now:
        held_by, expires, host, pid = str(row[0]), float(row[1]), str(row[2]), int(row[3])
        if not gone(host, pid):
            raise SessionClaimedError(held_text(id, held_by, host, pid, expires - now))
    host, pid = current()
    conn.execute(
        "INSERT INTO dive_claims (session_id, owner, expires_at, host, pid) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
        "expires_at = excluded.expires_at, host = excluded.host, pid = excluded.pid",
        (id, owner, now + ttl, host, pid),
    )
