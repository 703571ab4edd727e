"""Turns: the records of what happened, and the one owner of a turn while it runs.

This package sits below ``dive.agent`` and ``dive.sessions``: sessions store its records,
the agent drives its state. It holds

- the records (``Turn``, ``TurnOutcome``, ``ToolCallRecord``, ``PendingToolCall``,
  ``SuspensionState``), which round-trip exactly through JSON;
- the close projection (``close_turn``) and its texts, and closing stored turns without
  running them (``recover_running_turn``, ``close_for_fork``);
- the call ledger (``CallLedger``), the only owner of call states, whose transitions are one
  table (``TRANSITIONS``);
- ``TurnState``, whose fields change only through its own methods, and the ``Ending`` union
  every driver step returns;
- reminders and the ``CancelToken``.
"""

from dive.turns._cancel import CancelToken
from dive.turns._close import (
    HALTED_TEXT,
    NOT_RUN_TEXT,
    UNKNOWN_TEXT,
    advise,
    answer_open_calls,
    close_turn,
    find_latest_turn_outcome,
    find_turn_outcome,
    open_group_calls,
    outcome_note,
)
from dive.turns._ending import Completed, Ending, Incomplete, ResumeRejected, Suspended
from dive.turns._group import OpenGroup
from dive.turns._ledger import PHASE_STATE, TRANSITIONS, CallLedger, LedgerError, Phase, Transition
from dive.turns._records import (
    SCHEMA_VERSION,
    ApprovalKind,
    ApprovalRecord,
    CallState,
    IncompleteReason,
    NextStep,
    PendingToolCall,
    Persistence,
    SuspensionState,
    ToolCallRecord,
    Turn,
    TurnOrigin,
    TurnOutcome,
    TurnStatus,
    new_turn_id,
)
from dive.turns._recover import (
    close_for_fork,
    close_stored_turn,
    recover_running_turn,
    split_suspended,
    suspended_records,
    turn_from_suspension,
)
from dive.turns._reminders import (
    RESERVED_REMINDERS,
    Reminder,
    find_latest_reminder,
    find_reminder,
    is_reminder,
    reminder_details,
    reminder_message,
    remove_reminder,
    strip_reminders,
)
from dive.turns._state import TurnState
from dive.turns._view import TurnView

__all__ = [
    "ApprovalKind",
    "ApprovalRecord",
    "HALTED_TEXT",
    "NOT_RUN_TEXT",
    "PHASE_STATE",
    "RESERVED_REMINDERS",
    "SCHEMA_VERSION",
    "TRANSITIONS",
    "UNKNOWN_TEXT",
    "CallLedger",
    "CallState",
    "CancelToken",
    "Completed",
    "Ending",
    "Incomplete",
    "IncompleteReason",
    "LedgerError",
    "NextStep",
    "OpenGroup",
    "PendingToolCall",
    "Persistence",
    "Phase",
    "Reminder",
    "ResumeRejected",
    "Suspended",
    "SuspensionState",
    "ToolCallRecord",
    "Transition",
    "Turn",
    "TurnOrigin",
    "TurnOutcome",
    "TurnState",
    "TurnStatus",
    "TurnView",
    "advise",
    "answer_open_calls",
    "close_for_fork",
    "close_stored_turn",
    "close_turn",
    "find_latest_reminder",
    "find_latest_turn_outcome",
    "find_reminder",
    "find_turn_outcome",
    "is_reminder",
    "new_turn_id",
    "open_group_calls",
    "outcome_note",
    "recover_running_turn",
    "reminder_details",
    "reminder_message",
    "remove_reminder",
    "split_suspended",
    "strip_reminders",
    "suspended_records",
    "turn_from_suspension",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
