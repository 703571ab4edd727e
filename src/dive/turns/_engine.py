"""The turn engine: the pieces only the agent loop drives (``dive.agent`` imports them here).

``dive.turns`` keeps the records (``Turn``, ``TurnOutcome``, ``SuspensionState``…) and the
functions users call on them; what changes a turn while it runs — ``TurnState`` and the
owners it is made of (the call ledger and its transition table, the open tool group), the
``Ending`` union every driver step returns, and the projections the ending applies — is
private to the loop. ``tests/test_architecture.py`` allows only ``dive.agent`` to import this
module.
"""

from dive.turns._close import advise, answer_open_calls, open_group_calls
from dive.turns._ending import Completed, Ending, Incomplete, ResumeRejected, Suspended
from dive.turns._group import OpenGroup
from dive.turns._ledger import PHASE_STATE, TRANSITIONS, CallLedger, LedgerError, Phase, Transition
from dive.turns._recover import (
    close_stored_turn,
    split_suspended,
    suspended_records,
    turn_from_suspension,
)
from dive.turns._state import TurnState
from dive.turns._transcript import Transcript

__all__ = [
    "PHASE_STATE",
    "TRANSITIONS",
    "CallLedger",
    "Completed",
    "Ending",
    "Incomplete",
    "LedgerError",
    "OpenGroup",
    "Phase",
    "ResumeRejected",
    "Suspended",
    "Transcript",
    "Transition",
    "TurnState",
    "advise",
    "answer_open_calls",
    "close_stored_turn",
    "open_group_calls",
    "split_suspended",
    "suspended_records",
    "turn_from_suspension",
]
