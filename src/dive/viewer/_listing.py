"""The sessions list: one row per session, filtered by status, reason and a search.

A row reads the session's turn records: the last turn's status, reason and next step, the
total cost (unknown when any turn's cost is), and whether the session needs reconciling
(its last turn advises ``reconcile``). The search matches the session id, its title, or
any message text or tool call (name, arguments) of its turns, case-insensitively.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from dive.llm import Usage
from dive.messages import Message
from dive.sessions import SessionInfo, SessionStore
from dive.turns import Turn

__all__ = ["STATUS_FILTERS", "SessionRow", "session_rows"]

STATUS_FILTERS = ("completed", "incomplete", "suspended", "running", "reconcile")
"""The status filter's values: a last turn's status, or ``reconcile`` (needs reconciling)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRow:
    """One session in the list."""

    id: str
    title: str | None
    updated_at: datetime | None
    turn_count: int
    status: str | None
    reason: str | None
    next: str | None
    usage: Usage
    needs_reconcile: bool
    waiting: int


def _row(info: SessionInfo, turns: Sequence[Turn]) -> SessionRow:
    last = turns[-1] if turns else None
    outcome = last.outcome if last is not None else None
    usage = Usage.ZERO
    for t in turns:
        usage = usage + t.usage
    waiting = 0
    if last is not None and last.status == "suspended" and last.suspension is not None:
        waiting = len(last.suspension.pending_tool_calls)
    return SessionRow(
        id=info.id,
        title=info.title,
        updated_at=info.updated_at,
        turn_count=len(turns),
        status=last.status if last is not None else None,
        reason=outcome.reason if outcome is not None else None,
        next=outcome.next if outcome is not None else None,
        usage=usage,
        needs_reconcile=outcome is not None and outcome.next == "reconcile",
        waiting=waiting,
    )


def _matches(info: SessionInfo, turns: Sequence[Turn], needle: str) -> bool:
    if needle in info.id.lower() or needle in (info.title or "").lower():
        return True
    return any(needle in _searchable(m) for t in turns for m in t.messages)


def _searchable(message: Message) -> str:
    """A message's text and its tool calls' names and arguments, lower-cased."""
    parts = [message.text]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(json.dumps(dict(call.arguments), ensure_ascii=False))
    return " ".join(parts).lower()


def _wanted(row: SessionRow, status: str | None, reason: str | None) -> bool:
    if status == "reconcile" and not row.needs_reconcile:
        return False
    if status not in (None, "reconcile") and row.status != status:
        return False
    return reason is None or row.reason == reason


async def session_rows(
    store: SessionStore,
    *,
    status: str | None = None,
    reason: str | None = None,
    query: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[SessionRow]:
    """Rows of the sessions list, most recently active first.

    Args:
        store: the session store.
        status: keep sessions whose last turn has this status (or ``reconcile``).
        reason: keep sessions whose last turn ended with this outcome reason.
        query: keep sessions whose id, title or messages contain it.
        limit: the most sessions read from the store.
        offset: sessions skipped first (paging).
    """
    needle = (query or "").strip().lower()
    out: list[SessionRow] = []
    for info in await store.list(limit=limit, offset=offset):
        turns = await store.turns(info.id)
        if needle and not _matches(info, turns, needle):
            continue
        row = _row(info, turns)
        if _wanted(row, status, reason):
            out.append(row)
    return out
