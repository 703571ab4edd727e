"""The agent loop: ``Agent``, its options, hooks, events, records and results."""

from dive.agent._agent import Agent, UserInput
from dive.agent._approval import (
    ApprovalDecision,
    ApprovalPolicy,
    ResumeAwarePolicy,
    ToolApproval,
    allow,
    ask,
    default_policy,
    deny,
)
from dive.agent._background import BackgroundResult, BackgroundTaskHandle, await_background_tasks
from dive.agent._context import RunContext
from dive.agent._events import (
    AgentEvent,
    MessageEvent,
    ModelStreamEvent,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.agent._extension import Extension
from dive.agent._hooks import (
    HOOK_POINTS,
    HOOK_POLICIES,
    Hook,
    HookContext,
    HookPoint,
    HookPolicy,
    Hooks,
    SessionStartResult,
    StopDecision,
)
from dive.agent._instructions import Instructions, InstructionsFn
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._output import ModelRetry, OutputMode, OutputValidator
from dive.agent._outputs import to_tool_result
from dive.agent._result import RunResult
from dive.agent._runargs import DEFAULT, RunArgs, StreamArgs
from dive.agent._runner import InProcessRunner, ModelCall, Runner, StepRef, ToolOutcome, ToolTask
from dive.agent._stream import AgentStream
from dive.agent._text import TextHandler
from dive.agent._usage_limits import UsageLimits

__all__ = [
    "ApprovalDecision",
    "ApprovalPolicy",
    "ResumeAwarePolicy",
    "ToolApproval",
    "allow",
    "ask",
    "default_policy",
    "deny",
    "DEFAULT",
    "BackgroundResult",
    "BackgroundTaskHandle",
    "await_background_tasks",
    "HOOK_POINTS",
    "HOOK_POLICIES",
    "HookPoint",
    "HookPolicy",
    "Agent",
    "AgentEvent",
    "AgentStream",
    "Durability",
    "Extension",
    "Hook",
    "HookContext",
    "Hooks",
    "IncompleteTurns",
    "Instructions",
    "InstructionsFn",
    "Limits",
    "MessageEvent",
    "ModelRetry",
    "ModelStreamEvent",
    "OutputMode",
    "OutputValidator",
    "RunContext",
    "RunResult",
    "RunArgs",
    "StreamArgs",
    "Runner",
    "InProcessRunner",
    "ModelCall",
    "StepRef",
    "ToolOutcome",
    "ToolTask",
    "SessionStartResult",
    "StopDecision",
    "TextHandler",
    "ToolCallEvent",
    "ToolCallResultEvent",
    "TurnEndedEvent",
    "UsageLimits",
    "UserInput",
    "to_tool_result",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
