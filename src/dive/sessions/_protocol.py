"""The session store protocol: the session *is* the turn store.

Every method takes the session id (``[A-Za-z0-9._:-]{1,128}``, validated before anything is
read or written). One session-wide revision advances on every write. ``checkpoint`` replaces
the open turn when the ids match and appends a new turn otherwise; a stale
``expected_revision`` raises ``RevisionConflictError`` and writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from dive.errors import UserError
from dive.llm import Usage
from dive.messages import Message
from dive.messages.codec import empty
from dive.turns import Turn, TurnOutcome

__all__ = [
    "Session",
    "SessionInfo",
    "SessionSnapshot",
    "SessionStore",
    "validate_session_id",
]

_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_SHOWN = 40


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` or raise ``UserError`` saying what is allowed.

    The whole string must match: a trailing newline is refused, never trimmed.

    Args:
        session_id: the id to check.
    """
    if not isinstance(session_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"invalid session id of type {type(session_id).__name__}: use a string of 1-128 "
            "characters from A-Z a-z 0-9 . _ : -"
        )
    if _ID.fullmatch(session_id) is None:
        shown = repr(session_id)
        if len(session_id) > _SHOWN:
            shown = f"{session_id[:_SHOWN]!r}… ({len(session_id)} characters)"
        raise UserError(
            f"invalid session id {shown}: use 1-128 characters from A-Z a-z 0-9 . _ : -"
        )
    return session_id


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSnapshot:
    """A session as loaded.

    Attributes:
        history: the conversation before the open turn, as the model sees it (from the latest
            compaction summary on; superseded turns appear closed).
        open_turn: the last turn if suspended, incomplete or running, else None.
        revision: the session revision (0 when empty).
        latest_outcome: the outcome of the latest incomplete turn record, kept across
            compaction; None once a later turn completed.
    """

    history: tuple[Message, ...] = ()
    open_turn: Turn | None = None
    revision: int = 0
    latest_outcome: TurnOutcome | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """A row of ``list()``.

    Attributes:
        id: the session id.
        title: a title, if one was set.
        created_at: when the session's first entry was written.
        updated_at: when it last changed.
        turn_count: how many turn records it holds.
        revision: its current revision.
        suspended: its open turn is suspended (waiting for results or approvals).
        metadata: string annotations set by the application.
    """

    id: str
    title: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    turn_count: int = 0
    revision: int = 0
    suspended: bool = False
    metadata: Mapping[str, str] = field(default_factory=empty)


@runtime_checkable
class SessionStore(Protocol):
    """Durable storage of turn records, by session id."""

    async def load(self, id: str) -> SessionSnapshot:
        """The session's snapshot (an empty one for an unknown id).

        Args:
            id: the session id.
        """
        ...

    async def checkpoint(self, id: str, turn: Turn, *, expected_revision: int) -> int:
        """Replace the open turn (same id) or append ``turn``; return the new revision.

        Args:
            id: the session id.
            turn: the turn record to write.
            expected_revision: the revision the caller loaded; a different stored revision raises
                ``RevisionConflictError`` and nothing is written.
        """
        ...

    async def list(
        self, *, limit: int = 100, offset: int = 0, suspended: bool | None = None
    ) -> list[SessionInfo]:
        """Sessions, most recently updated first.

        Args:
            limit: at most this many sessions.
            offset: skip this many first (for paging).
            suspended: only suspended sessions (True), only others (False), or all (None).
        """
        ...

    async def delete(self, id: str) -> None:
        """Delete a session (idempotent).

        Args:
            id: the session id.
        """
        ...

    async def fork(self, id: str, new_id: str, *, include_open_turn: bool = False) -> int:
        """Copy a session up to its last completed turn (optionally the open turn, closed).

        Args:
            id: the session to copy.
            new_id: the new session's id (it must be empty).
            include_open_turn: also copy the open turn, closed (a suspended or running one is closed
                ``canceled``).
        """
        ...

    async def compact(
        self,
        id: str,
        summary: Message,
        *,
        head: Sequence[Message] = (),
        tail: Sequence[Message] = (),
    ) -> int:
        """Record a compaction; earlier turns stay stored but leave the history.

        The history restarts at ``head + summary + tail`` (verbatim copies of kept messages;
        it must be a valid history). Refused while the open turn is suspended or running.

        Args:
            id: the session id.
            summary: the summary message that stands for the compacted turns.
            head: messages kept verbatim before the summary.
            tail: messages kept verbatim after it.
        """
        ...

    async def remove_last_turn(self, id: str, *, expected_revision: int | None = None) -> int:
        """Delete the last turn in any state.

        Args:
            id: the session id.
            expected_revision: the revision the caller loaded, or None to skip the check.
        """
        ...

    async def turns(self, id: str) -> list[Turn]:
        """Every turn record, oldest first (compacted ones included).

        Args:
            id: the session id.
        """
        ...

    async def total_usage(self, id: str) -> Usage:
        """Usage summed over every turn record.

        Args:
            id: the session id.
        """
        ...

    async def claim(self, id: str, owner: str, ttl: float) -> None:
        """Take the session for ``owner`` for ``ttl`` seconds (``SessionClaimedError`` if held).

        Args:
            id: the session id.
            owner: who claims it (one id per process or worker).
            ttl: seconds the claim lasts unless renewed.
        """
        ...

    async def renew_claim(self, id: str, owner: str, ttl: float) -> None:
        """Extend ``owner``'s claim (``SessionClaimedError`` if lost).

        Args:
            id: the session id.
            owner: the claim's owner.
            ttl: seconds from now the claim lasts.
        """
        ...

    async def release_claim(self, id: str, owner: str) -> None:
        """Release ``owner``'s claim (no error if it is not held).

        Args:
            id: the session id.
            owner: the claim's owner.
        """
        ...

    def session(self, id: str) -> Session:
        """A handle bound to one session id.

        Args:
            id: the session id: 1-128 characters from ``A-Z a-z 0-9 . _ : -``.
        """
        ...


class Session:
    """A store bound to one session id: what ``Agent(session=...)`` takes.

    Args:
        store: the store that holds the session.
        id: the session id.
    """

    __slots__ = ("id", "store")

    def __init__(self, store: SessionStore, id: str) -> None:
        self.store = store
        self.id = validate_session_id(id)

    async def load(self) -> SessionSnapshot:
        """See :meth:`SessionStore.load`."""
        return await self.store.load(self.id)

    async def checkpoint(self, turn: Turn, *, expected_revision: int) -> int:
        """See :meth:`SessionStore.checkpoint`.

        Args:
            turn: the turn record to write.
            expected_revision: the revision the caller loaded.
        """
        return await self.store.checkpoint(self.id, turn, expected_revision=expected_revision)

    async def delete(self) -> None:
        """See :meth:`SessionStore.delete`."""
        await self.store.delete(self.id)

    async def fork(self, new_id: str, *, include_open_turn: bool = False) -> int:
        """See :meth:`SessionStore.fork`.

        Args:
            new_id: the new session's id (it must be empty).
            include_open_turn: also copy the open turn, closed.
        """
        return await self.store.fork(self.id, new_id, include_open_turn=include_open_turn)

    async def compact(
        self, summary: Message, *, head: Sequence[Message] = (), tail: Sequence[Message] = ()
    ) -> int:
        """See :meth:`SessionStore.compact`.

        Args:
            summary: the summary message that stands for the compacted turns.
            head: messages kept verbatim before the summary.
            tail: messages kept verbatim after it.
        """
        if not head and not tail:
            return await self.store.compact(self.id, summary)
        return await self.store.compact(self.id, summary, head=head, tail=tail)

    async def remove_last_turn(self, *, expected_revision: int | None = None) -> int:
        """See :meth:`SessionStore.remove_last_turn`.

        Args:
            expected_revision: the revision the caller loaded, or None to skip the check.
        """
        return await self.store.remove_last_turn(self.id, expected_revision=expected_revision)

    async def turns(self) -> list[Turn]:
        """See :meth:`SessionStore.turns`."""
        return await self.store.turns(self.id)

    async def total_usage(self) -> Usage:
        """See :meth:`SessionStore.total_usage`."""
        return await self.store.total_usage(self.id)

    async def claim(self, owner: str, ttl: float) -> None:
        """See :meth:`SessionStore.claim`.

        Args:
            owner: who claims it (one id per process or worker).
            ttl: seconds the claim lasts unless renewed.
        """
        await self.store.claim(self.id, owner, ttl)

    async def renew_claim(self, owner: str, ttl: float) -> None:
        """See :meth:`SessionStore.renew_claim`.

        Args:
            owner: the claim's owner.
            ttl: seconds from now the claim lasts.
        """
        await self.store.renew_claim(self.id, owner, ttl)

    async def release_claim(self, owner: str) -> None:
        """See :meth:`SessionStore.release_claim`.

        Args:
            owner: the claim's owner.
        """
        await self.store.release_claim(self.id, owner)

    async def messages(self) -> list[Message]:
        """The full history as the model would see it now (open turn included)."""
        snap = await self.load()
        out = list(snap.history)
        if snap.open_turn is not None:
            out.extend(snap.open_turn.messages)
        return out

    def __repr__(self) -> str:
        return f"Session({self.id!r})"
