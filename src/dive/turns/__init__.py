"""Turns: the records of what happened, and the functions users call on them.

This package sits below ``dive.agent`` and ``dive.sessions``: sessions store its records,
the agent drives a turn through the engine (``dive.turns._engine``: ``TurnState``, the call
ledger and its transition table, the open tool group, the ``Ending`` union), which only
``dive.agent`` imports. Here are

- the records (``Turn``, ``TurnOutcome``, ``ToolCallRecord``, ``PendingToolCall``,
  ``SuspensionState``), which round-trip exactly through JSON, ``TurnCounters`` (a record's
  counts as one value: ``turn.counters``) and ``TurnView`` (a turn as a hook sees it);
- the close projection (``close_turn``) and its texts, and closing stored turns without
  running them (``recover_running_turn``, ``close_for_fork``);
- reminders and the ``CancelToken``.
"""

from dive.turns._cancel import CancelToken
from dive.turns._close import (
    HALTED_TEXT,
    NOT_RUN_TEXT,
    UNKNOWN_TEXT,
    close_turn,
    find_latest_turn_outcome,
    find_turn_outcome,
    outcome_note,
)
from dive.turns._counters import TurnCounters
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
from dive.turns._recover import close_for_fork, recover_running_turn
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
from dive.turns._view import TurnView

__all__ = [
    "ApprovalKind",
    "ApprovalRecord",
    "HALTED_TEXT",
    "NOT_RUN_TEXT",
    "RESERVED_REMINDERS",
    "SCHEMA_VERSION",
    "UNKNOWN_TEXT",
    "CallState",
    "CancelToken",
    "IncompleteReason",
    "NextStep",
    "PendingToolCall",
    "Persistence",
    "Reminder",
    "SuspensionState",
    "ToolCallRecord",
    "Turn",
    "TurnCounters",
    "TurnOrigin",
    "TurnOutcome",
    "TurnStatus",
    "TurnView",
    "close_for_fork",
    "close_turn",
    "find_latest_reminder",
    "find_latest_turn_outcome",
    "find_reminder",
    "find_turn_outcome",
    "is_reminder",
    "new_turn_id",
    "outcome_note",
    "recover_running_turn",
    "reminder_details",
    "reminder_message",
    "remove_reminder",
    "strip_reminders",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
