"""The agent loop: ``Agent``, its options, hooks, events, records and results."""

from dive.agent._agent import DEFAULT, Agent, UserInput
from dive.agent._approval import (
    DENIED_TEXT,
    ApprovalDecision,
    ApprovalPolicy,
    ToolApproval,
    allow,
    ask,
    default_policy,
    deny,
)
from dive.agent._background import BackgroundResult, BackgroundTaskHandle, await_background_tasks
from dive.agent._cancel import CancelToken
from dive.agent._close import (
    NOT_RUN_TEXT,
    UNKNOWN_TEXT,
    close_turn,
    find_latest_turn_outcome,
    find_turn_outcome,
)
from dive.agent._events import (
    AgentEvent,
    MessageEvent,
    ModelStreamEvent,
    ToolCallEvent,
    ToolCallResultEvent,
    ToolProgressEvent,
    ToolStreamEvent,
    TurnEndedEvent,
)
from dive.agent._extension import Extension
from dive.agent._hooks import (
    HOOK_POINTS,
    Hook,
    HookContext,
    Hooks,
    SessionStartResult,
    StopDecision,
)
from dive.agent._locks import session_lock
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._records import (
    CallState,
    PendingToolCall,
    SuspensionState,
    ToolCallRecord,
    Turn,
    TurnOrigin,
    TurnOutcome,
)
from dive.agent._recover import recover_running_turn
from dive.agent._reminders import (
    Reminder,
    find_latest_reminder,
    find_reminder,
    remove_reminder,
    strip_reminders,
)
from dive.agent._result import RunResult
from dive.agent._stream import AgentStream

__all__ = [
    "DENIED_TEXT",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ToolApproval",
    "allow",
    "ask",
    "default_policy",
    "deny",
    "DEFAULT",
    "BackgroundResult",
    "BackgroundTaskHandle",
    "await_background_tasks",
    "recover_running_turn",
    "session_lock",
    "HOOK_POINTS",
    "NOT_RUN_TEXT",
    "UNKNOWN_TEXT",
    "Agent",
    "AgentEvent",
    "AgentStream",
    "CallState",
    "CancelToken",
    "Durability",
    "Extension",
    "Hook",
    "HookContext",
    "Hooks",
    "IncompleteTurns",
    "Limits",
    "MessageEvent",
    "ModelStreamEvent",
    "PendingToolCall",
    "Reminder",
    "RunResult",
    "SessionStartResult",
    "StopDecision",
    "SuspensionState",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolCallResultEvent",
    "ToolProgressEvent",
    "ToolStreamEvent",
    "Turn",
    "TurnEndedEvent",
    "TurnOrigin",
    "TurnOutcome",
    "UserInput",
    "close_turn",
    "find_latest_reminder",
    "find_latest_turn_outcome",
    "find_reminder",
    "find_turn_outcome",
    "remove_reminder",
    "strip_reminders",
]
