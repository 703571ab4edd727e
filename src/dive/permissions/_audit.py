"""The audit log: every approval-gate decision, read back from turn records.

The gate notes each decision in the call's record (``ToolCallRecord.approvals``), so the log
is saved with the turn by every session store and round-trips through JSON. ``audit_log``
flattens it, in turn and call order, with the ids that say which call each entry is about.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from dive.turns import Turn

__all__ = ["AuditEntry", "audit_log"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One approval-gate decision about one call.

    Attributes:
        turn_id: the turn the call belongs to.
        call_id: the tool call id.
        tool: the tool name.
        decision: ``allow``, ``deny`` or ``ask``.
        decided_by: ``rule``, ``mode``, ``session_grant``, ``dialog``, ``hook``, ``policy``
            or ``resume``.
        rule: the rule that decided (for a dialog, the rule that asked), if any.
        message: the denial text or the ask's prompt, if any.
        at: when it was decided.
    """

    turn_id: str
    call_id: str
    tool: str
    decision: Literal["allow", "deny", "ask"]
    decided_by: str
    rule: str | None = None
    message: str | None = None
    at: datetime | None = None


def audit_log(turns: Turn | Iterable[Turn]) -> tuple[AuditEntry, ...]:
    """Every approval decision recorded in ``turns`` (one turn, or a session's turns).

    Args:
        turns: a turn, or turns such as ``await session.turns()``.
    """
    out: list[AuditEntry] = []
    for turn in (turns,) if isinstance(turns, Turn) else turns:
        for record in turn.tool_calls:
            out.extend(
                AuditEntry(
                    turn_id=turn.id,
                    call_id=record.id,
                    tool=record.name,
                    decision=a.decision,
                    decided_by=a.decided_by,
                    rule=a.rule,
                    message=a.message,
                    at=a.at,
                )
                for a in record.approvals
            )
    return tuple(out)
