"""The call ledger: the one owner of a turn's tool call states.

Every call of a recorded response is *announced* the moment the response is accepted, so it
has a record from then on (a crash after that checkpoint still finds it). From there a call
moves only through the named transitions of one table; anything else is a bug and raises
:class:`LedgerError`.

Internal phases and the state each one is recorded as:

===============  ===============  ================================================
phase            recorded state   meaning
===============  ===============  ================================================
``not_started``  ``not_started``  announced, never began
``starting``     ``running``      about to start; the checkpoint says running, but
                                  the tool has not been invoked yet
``running``      ``running``      the tool was invoked
``held``         ``waiting``      held at the approval gate, never started
``suspended``    ``waiting``      the tool returned ``Suspend`` (it did start)
``completed``    ``completed``    it has its own result (an error result included)
``unknown``      ``unknown``      started, result not recorded (or it timed out)
===============  ===============  ================================================

Transitions (``close`` is how a turn that ends settles every call without a result):

================  =========================================================
transition        from → to
================  =========================================================
``begin``         not_started → starting
``abort_start``   starting → not_started (the checkpoint failed, or the batch
                  stopped before the tool was invoked)
``start``         not_started | starting → running
``finish``        running → completed
``time_out``      running → unknown (the call keeps its timeout text)
``reject``        not_started | held → completed (answered without running)
``hold``          not_started → held
``suspend``       running → suspended
``release``       held → not_started (approved: it runs on resume)
``supply``        suspended | held → completed (an external result)
``recall``        suspended → running (resumed with an answer the tool itself
                  takes: ``Suspend(call_again=True)``)
``close``         running | suspended → unknown; starting | held →
                  not_started; the rest stay as they are
================  =========================================================

No path leads from a phase in which the tool was invoked (``running``, ``suspended``) to
``not_started``: a call that may have started is never reported as not run.

Beside its state, each call keeps its audit log: the approval gate's decisions about it
(:meth:`CallLedger.note_approval`), recorded as ``ToolCallRecord.approvals``. Noting a
decision changes no state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Literal

from dive.messages import ToolCall, ToolDefinition
from dive.turns._records import (
    ApprovalKind,
    ApprovalRecord,
    CallState,
    PendingToolCall,
    SuspensionState,
    ToolCallRecord,
)

__all__ = ["PHASE_STATE", "TRANSITIONS", "CallLedger", "LedgerError", "Phase", "Transition"]

Phase = Literal["not_started", "starting", "running", "held", "suspended", "completed", "unknown"]
Transition = Literal[
    "begin",
    "abort_start",
    "start",
    "finish",
    "time_out",
    "reject",
    "hold",
    "suspend",
    "release",
    "supply",
    "recall",
    "close",
]

PHASE_STATE: Mapping[Phase, CallState] = {
    "not_started": "not_started",
    "starting": "running",
    "running": "running",
    "held": "waiting",
    "suspended": "waiting",
    "completed": "completed",
    "unknown": "unknown",
}

TRANSITIONS: Mapping[Transition, Mapping[Phase, Phase]] = {
    "begin": {"not_started": "starting"},
    "abort_start": {"starting": "not_started"},
    "start": {"not_started": "running", "starting": "running"},
    "finish": {"running": "completed"},
    "time_out": {"running": "unknown"},
    "reject": {"not_started": "completed", "held": "completed"},
    "hold": {"not_started": "held"},
    "suspend": {"running": "suspended"},
    "release": {"held": "not_started"},
    "supply": {"suspended": "completed", "held": "completed"},
    "recall": {"suspended": "running"},
    "close": {
        "not_started": "not_started",
        "starting": "not_started",
        "running": "unknown",
        "held": "not_started",
        "suspended": "unknown",
        "completed": "completed",
        "unknown": "unknown",
    },
}


_WAITING: frozenset[Phase] = frozenset({"held", "suspended"})


class LedgerError(AssertionError):
    """An illegal call-state transition: a bug in dive, never the user's input."""


class _Entry:
    __slots__ = (
        "approvals",
        "effect",
        "error",
        "id",
        "index",
        "name",
        "origin",
        "pending",
        "phase",
        "record",
        "risk",
        "tags",
    )

    def __init__(self, id: str, name: str, phase: Phase) -> None:
        self.index = -1  # its place in the ledger's announcement order
        self.id = id
        self.name = name
        self.phase: Phase = phase
        self.error: str | None = None
        self.pending: PendingToolCall | None = None
        self.record: ToolCallRecord | None = None
        self.origin: str | None = None
        self.tags: tuple[str, ...] = ()
        self.effect: str | None = None
        self.risk: str | None = None
        self.approvals: tuple[ApprovalRecord, ...] = ()

    def govern(self, d: ToolDefinition) -> None:
        self.origin, self.tags = d.origin, tuple(sorted(d.tags))
        self.effect, self.risk = d.effect_type, d.risk_level

    def build(self) -> ToolCallRecord:
        if self.record is None:
            state = PHASE_STATE[self.phase]
            self.record = ToolCallRecord(
                id=self.id,
                name=self.name,
                state=state,
                reconcile=state == "unknown" and self.effect != "read_only",
                error=self.error,
                origin=self.origin,
                tags=self.tags,
                effect=self.effect,
                risk=self.risk,
                approvals=self.approvals,
            )
        return self.record


class CallLedger:
    """Call states of one turn, changed only through the transitions of :data:`TRANSITIONS`."""

    __slots__ = ("_dirty", "_entries", "_executed", "_order", "_records", "_waiting")

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._order: list[_Entry] = []  # announcement order
        self._records: list[ToolCallRecord | None] = []  # each entry's record, when built
        self._dirty: list[int] = []  # entries whose record changed since the last records()
        self._executed = 0
        self._waiting = 0

    def _add(self, entry: _Entry) -> None:
        entry.index = len(self._order)
        self._entries[entry.id] = entry
        self._order.append(entry)
        self._records.append(None)
        self._dirty.append(entry.index)

    def _changed(self, entry: _Entry) -> None:
        entry.record = None
        self._dirty.append(entry.index)

    # --- reading ------------------------------------------------------------------------------

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def waiting(self) -> bool:
        """True while some call is held at the gate or suspended."""
        return self._waiting > 0

    @property
    def executed(self) -> int:
        """Calls of this turn whose tool was invoked (the ``max_tool_calls_per_turn`` count)."""
        return self._executed

    def phase(self, call_id: str) -> Phase:
        """The internal phase of ``call_id``.

        Args:
            call_id: an announced call's id.
        """
        return self._entry(call_id).phase

    def state(self, call_id: str) -> CallState:
        """The recorded state of ``call_id``.

        Args:
            call_id: an announced call's id.
        """
        entry = self._entries.get(call_id)
        return PHASE_STATE[(entry or self._entry(call_id)).phase]

    def pending(self, call_id: str) -> PendingToolCall | None:
        """The pending call of a held or suspended call.

        Args:
            call_id: an announced call's id.
        """
        return self._entry(call_id).pending

    def records(self, ids: Iterable[str] | None = None) -> tuple[ToolCallRecord, ...]:
        """Records of ``ids`` (every call of the turn when None), in announcement order.

        Args:
            ids: the calls to report; None: every call of the turn.
        """
        if ids is None:  # on every checkpoint: rebuild only the records that changed
            if self._dirty:
                cache, order = self._records, self._order
                for i in self._dirty:
                    cache[i] = order[i].build()
                self._dirty.clear()
            return tuple(self._records)  # pyright: ignore[reportReturnType]
        return tuple(self._entries[i].build() for i in ids if i in self._entries)

    def _entry(self, call_id: str) -> _Entry:
        entry = self._entries.get(call_id)
        if entry is None:
            raise LedgerError(f"tool call {call_id!r} was never announced in this turn")
        return entry

    # --- transitions --------------------------------------------------------------------------

    def announce(self, call: ToolCall, definition: ToolDefinition | None) -> None:
        """Record a call of an accepted response as ``not_started``.

        Args:
            call: the model's tool call.
            definition: its tool's definition (governance fields copied into the record), or None
                for an unknown tool.
        """
        if call.id in self._entries:
            raise LedgerError(f"tool call {call.id!r} was announced twice in one turn")
        entry = _Entry(call.id, call.name, "not_started")
        if definition is not None:
            entry.govern(definition)
        self._add(entry)

    def apply(self, call_id: str, transition: Transition, *, error: str | None = None) -> Phase:
        """Apply ``transition`` to ``call_id``; raises ``LedgerError`` if the table forbids it.

        Args:
            call_id: an announced call's id.
            transition: the named transition (``TRANSITIONS`` lists the allowed ones).
            error: the call's error text, kept on its record.
        """
        entry = self._entries.get(call_id) or self._entry(call_id)
        to = TRANSITIONS[transition].get(entry.phase)
        if to is None:
            raise LedgerError(
                f"tool call {call_id!r}: transition {transition!r} is not allowed from "
                f"{entry.phase!r}"
            )
        was = entry.phase
        if to == "running" and was != "running":
            self._executed += 1
        if (to in _WAITING) != (was in _WAITING):
            self._waiting += 1 if to in _WAITING else -1
        if was != to or error is not None:
            entry.phase = to
            if error is not None:
                entry.error = error
            self._changed(entry)
        if to not in ("held", "suspended"):
            entry.pending = None
        return to

    def begin(self, call_id: str) -> None:
        """The call is about to start (recorded ``running`` from the next checkpoint on).

        Args:
            call_id: the call about to start.
        """
        self.apply(call_id, "begin")

    def abort_start(self, call_id: str) -> None:
        """The call will not start after all (its tool was never invoked).

        Args:
            call_id: the call that will not start.
        """
        self.apply(call_id, "abort_start")

    def start(self, call_id: str) -> None:
        """The tool is invoked now.

        Args:
            call_id: the call whose tool is invoked.
        """
        self.apply(call_id, "start")

    def finish(self, call_id: str, *, error: str | None = None, timed_out: bool = False) -> None:
        """The call produced its own result (``unknown`` when it timed out).

        Args:
            call_id: the call that returned.
            error: its error text, if its result is an error.
            timed_out: it hit its tool timeout, so its outcome is ``unknown``.
        """
        self.apply(call_id, "time_out" if timed_out else "finish", error=error)

    def reject(self, call_id: str, *, error: str | None = None) -> None:
        """The call is answered without running (denied, unknown tool, invalid input, ...).

        Args:
            call_id: the call answered without running.
            error: why, kept on its record.
        """
        self.apply(call_id, "reject", error=error)

    def hold(self, call_id: str, pending: PendingToolCall) -> None:
        """Hold an unstarted call (approval gate) or a started one that suspended.

        Args:
            call_id: the call to hold.
            pending: what the suspension reports about it.
        """
        self.apply(call_id, "suspend" if pending.started else "hold")
        self._entries[call_id].pending = pending

    def release(self, call_id: str) -> None:
        """A held call was approved: it is ``not_started`` again and runs next.

        Args:
            call_id: the approved call.
        """
        self.apply(call_id, "release")

    def supply(self, call_id: str) -> None:
        """An external result answers a held or suspended call.

        Args:
            call_id: the call answered from outside.
        """
        self.apply(call_id, "supply")

    def recall(self, call_id: str) -> None:
        """A suspended call is invoked again with the answer it waited for.

        Args:
            call_id: the suspended call to invoke again.
        """
        self.apply(call_id, "recall")

    def note_approval(
        self,
        call_id: str,
        *,
        decision: ApprovalKind,
        decided_by: str,
        rule: str | None = None,
        message: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Add an approval-gate decision to the call's audit log (its state is unchanged).

        Args:
            call_id: the call decided about.
            decision: ``allow``, ``deny`` or ``ask``.
            decided_by: who decided (``rule``, ``mode``, ``hook``, ``policy``, ``resume``, ...).
            rule: the rule that decided, if any.
            message: the denial text or the prompt of an ask, if any.
            at: when it was decided (default: now).
        """
        entry = self._entry(call_id)
        entry.approvals += (
            ApprovalRecord(
                decision=decision,
                decided_by=decided_by,
                rule=rule,
                message=message,
                at=at or datetime.now(UTC),
            ),
        )
        self._changed(entry)

    def close(self, ids: Iterable[str] | None = None) -> None:
        """Settle calls that have no result: started ones ``unknown``, the rest not started.

        Args:
            ids: the calls to settle; None: every call of the turn.
        """
        for call_id in list(self._entries) if ids is None else ids:
            self.apply(call_id, "close")

    # --- restoring ----------------------------------------------------------------------------

    @classmethod
    def restore(
        cls,
        records: Sequence[ToolCallRecord],
        *,
        suspension: SuspensionState | None = None,
        executed: int = 0,
        definition_of: Callable[[str], ToolDefinition | None] | None = None,
    ) -> CallLedger:
        """A ledger for a stored turn (fold, resume, recovery, fork).

        A ``waiting`` record is ``suspended`` when its pending call had started, else
        ``held``; a ``running`` record is ``running`` (its tool may have been invoked).

        Args:
            records: the stored turn's call records.
            suspension: its suspension, if suspended (tells held calls from suspended ones).
            executed: how many calls had run (the per-turn tool call count).
            definition_of: finds a tool's definition by name, to refresh the governance fields; None
                keeps the stored ones.
        """
        ledger = cls()
        pending = {p.id: p for p in suspension.pending_tool_calls} if suspension else {}
        for rec in records:
            if rec.state == "waiting":
                p = pending.get(rec.id)
                phase: Phase = "suspended" if p is None or p.started else "held"
            else:
                phase = rec.state
            entry = _Entry(rec.id, rec.name, phase)
            entry.error = rec.error
            entry.approvals = rec.approvals
            entry.pending = pending.get(rec.id) if phase in ("held", "suspended") else None
            d = definition_of(rec.name) if definition_of is not None else None
            if d is not None:
                entry.govern(d)
            else:  # keep the stored governance fields as they were
                entry.origin, entry.tags, entry.effect, entry.risk = (
                    rec.origin,
                    rec.tags,
                    rec.effect,
                    rec.risk,
                )
            ledger._add(entry)
            if phase in _WAITING:
                ledger._waiting += 1
        ledger._executed = executed
        return ledger
