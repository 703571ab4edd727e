"""The session log: pure rules every backend shares.

A session is an ordered log of entries: turn records and compaction records. ``checkpoint``
replaces the open turn when the ids match, appends otherwise (marking an incomplete open turn
``superseded``), and refuses to append while the open turn is suspended. The snapshot's
history starts at the latest compaction (its kept head, summary and kept tail); superseded and
completed turns appear with their (closed) messages. A compaction is refused while the open
turn is suspended or running (it would hide that turn), and its view must be a valid history.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import ClassVar, Literal

from pydantic import ConfigDict

from dive.errors import (
    MessageValidationError,
    NoTurnError,
    RevisionConflictError,
    SaveRejectedError,
    SuspendedSessionError,
    UserError,
)
from dive.llm import Usage
from dive.messages import Message, validate_complete_turns
from dive.messages.codec import FORBID_EXTRA
from dive.sessions._protocol import SessionSnapshot
from dive.turns import SCHEMA_VERSION, Turn, TurnOutcome

__all__ = [
    "Compaction",
    "Entry",
    "Head",
    "Plan",
    "compaction_entry",
    "plan_checkpoint",
    "plan_compact",
    "plan_checkpoint_tail",
    "plan_remove_last",
    "snapshot",
]

_OPEN = frozenset({"suspended", "incomplete", "running"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """A non-destructive compaction record: history restarts at ``head + summary + tail``.

    ``head`` and ``tail`` are verbatim copies of messages the compaction kept (the first
    exchange, the most recent ones); the turns they came from stay stored unchanged.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    kind: Literal["compaction"] = "compaction"
    summary: Message
    head: tuple[Message, ...] = ()
    tail: tuple[Message, ...] = ()
    revision: int = 0
    created_at: datetime | None = None

    @property
    def view(self) -> tuple[Message, ...]:
        """The history this compaction restarts from."""
        return (*self.head, self.summary, *self.tail)


Entry = Turn | Compaction


def is_open(turn: Turn) -> bool:
    """True for a suspended, incomplete or running turn that is not superseded."""
    return turn.status in _OPEN and not turn.superseded


def open_turn(entries: Sequence[Entry]) -> tuple[int, Turn] | None:
    """The index and record of the open turn, if the last entry is one."""
    if entries and isinstance(entries[-1], Turn) and is_open(entries[-1]):
        return len(entries) - 1, entries[-1]
    return None


def snapshot(entries: Sequence[Entry], revision: int) -> SessionSnapshot:
    """The snapshot of a log."""
    start = 0
    for i in range(len(entries) - 1, -1, -1):
        if isinstance(entries[i], Compaction):
            start = i
            break
    found = open_turn(entries)
    end = found[0] if found is not None else len(entries)
    history: list[Message] = []
    for e in entries[start:end]:
        if isinstance(e, Compaction):
            history.extend(e.view)
        else:
            history.extend(e.messages)
    latest: TurnOutcome | None = None
    for e in reversed(entries):
        if isinstance(e, Turn):
            if e.status == "completed":
                break
            if e.outcome is not None:
                latest = e.outcome
                break
    return SessionSnapshot(
        history=tuple(history),
        open_turn=found[1] if found is not None else None,
        revision=revision,
        latest_outcome=latest,
    )


@dataclass(frozen=True, slots=True)
class Head:
    """What the write rules need to know about the last entry (SQL backends keep columns)."""

    kind: str
    turn_id: str | None
    status: str | None
    superseded: bool

    @staticmethod
    def of(entry: Entry) -> Head:
        if isinstance(entry, Turn):
            return Head("turn", entry.id, entry.status, entry.superseded)
        return Head("compaction", None, None, False)

    @property
    def is_open(self) -> bool:
        return self.kind == "turn" and self.status in _OPEN and not self.superseded


@dataclass(frozen=True, slots=True)
class Plan:
    """What a write does: replace the last entry, or append (marking the last superseded)."""

    action: Literal["replace", "append"]
    turn: Turn
    supersede: bool = False


def plan_checkpoint(
    entries: Sequence[Entry], turn: Turn, *, expected_revision: int, revision: int
) -> Plan:
    """Validate a checkpoint against the whole log (see :func:`plan_checkpoint_tail`)."""
    head = Head.of(entries[-1]) if entries else None
    recorded = any(isinstance(e, Turn) and e.id == turn.id for e in entries)
    return plan_checkpoint_tail(
        head, recorded, turn, expected_revision=expected_revision, revision=revision
    )


def superseded(entry: Entry) -> Entry:
    """The last entry as rewritten when a new turn supersedes it."""
    assert isinstance(entry, Turn)
    return replace(entry, superseded=True)


def plan_checkpoint_tail(
    last: Head | None,
    id_recorded: bool,
    turn: Turn,
    *,
    expected_revision: int,
    revision: int,
) -> Plan:
    """Validate a checkpoint given only the last entry and whether ``turn.id`` is recorded.

    Raises ``SaveRejectedError`` subclasses; nothing is written.
    """
    if expected_revision != revision:
        raise RevisionConflictError(
            f"expected revision {expected_revision} but the session is at {revision}; "
            "reload the session and retry"
        )
    if turn.status not in ("running", "completed", "incomplete", "suspended"):
        raise UserError(f"cannot checkpoint a turn with status {turn.status!r}")
    if turn.status == "suspended" and turn.suspension is None:
        raise UserError("a suspended turn needs its suspension state")
    if turn.schema > SCHEMA_VERSION:
        raise UserError(
            f"turn {turn.id} has record schema {turn.schema}, newer than this dive writes "
            f"({SCHEMA_VERSION}); nothing was written. Build turns with this dive's Turn (the "
            "default schema), or upgrade dive-agents."
        )
    stamped = replace(turn, revision=revision + 1, persistence="saved")
    found = last if last is not None and last.is_open else None
    if found is not None and found.turn_id == turn.id:
        return Plan("replace", stamped)
    if id_recorded:
        raise RevisionConflictError(
            f"turn {turn.id} is already recorded and is not the open turn; it cannot be replaced"
        )
    if found is not None and found.status == "suspended":
        raise SuspendedSessionError(
            f"the session's turn {found.turn_id} is suspended: resume it with tool_results= or "
            "close it with cancel_suspended_turn() before starting a new turn"
        )
    return Plan("append", stamped, supersede=found is not None)


def plan_compact(last: Head | None) -> None:
    """Check that a compaction may be appended after the last entry."""
    if last is None or not last.is_open:
        return
    if last.status == "suspended":
        raise SuspendedSessionError(
            f"the session's turn {last.turn_id} is suspended: resume it with tool_results= or "
            "close it with cancel_suspended_turn() before compacting; nothing was written"
        )
    if last.status == "running":
        raise SaveRejectedError(
            f"the session's turn {last.turn_id} is running: compact after it ends (a crashed "
            "turn is closed by the next run); nothing was written"
        )


def compaction_entry(
    summary: Message,
    *,
    head: Sequence[Message] = (),
    tail: Sequence[Message] = (),
    revision: int,
) -> Compaction:
    """The record of a compaction; its view must be a valid history (``UserError``)."""
    if summary.kind != "compaction_summary":
        summary = summary.with_(kind="compaction_summary")
    entry = Compaction(
        summary=summary, head=tuple(head), tail=tuple(tail), revision=revision, created_at=now()
    )
    try:
        validate_complete_turns(entry.view)
    except MessageValidationError as exc:
        raise UserError(
            f"the compacted history is not a valid history ({exc}): keep whole tool exchanges "
            "in head and tail; nothing was written"
        ) from exc
    return entry


def plan_remove_last(last: Head | None, *, expected_revision: int | None, revision: int) -> None:
    """Check that ``remove_last_turn`` may delete the last entry; raises ``NoTurnError``."""
    if expected_revision is not None and expected_revision != revision:
        raise RevisionConflictError(
            f"expected revision {expected_revision} but the session is at {revision}"
        )
    if last is None:
        raise NoTurnError("the session has no turn to remove")
    if last.kind != "turn":
        raise NoTurnError("the last entry is a compaction, not a turn; nothing was removed")


def fork_entries(entries: Sequence[Entry], *, include_open_turn: bool) -> list[Entry]:
    """The entries a fork copies: up to the last completed turn, or the open turn closed."""
    from dive.turns import close_for_fork

    found = open_turn(entries)
    if found is None:
        return list(entries)
    base = list(entries[: found[0]])
    if include_open_turn:
        base.append(close_for_fork(found[1]))
    return base


def sum_usage(entries: Sequence[Entry]) -> Usage:
    """Usage summed over every turn record."""
    total = Usage.ZERO
    for e in entries:
        if isinstance(e, Turn):
            total = total + e.usage
    return total


def now() -> datetime:
    """The current UTC time."""
    return datetime.now(UTC)
