"""dive: one async agent loop with everything a serious agent needs.

The flat public surface re-exports the names most programs use; each concept lives in its own
package (``dive.agent``, ``dive.tools``, ``dive.llm``, ``dive.messages``, ``dive.sessions``,
``dive.testing``).
"""

from dive import errors, llm, messages
from dive.agent import (
    Agent,
    AgentEvent,
    CancelToken,
    Durability,
    Extension,
    HookContext,
    Hooks,
    IncompleteTurns,
    Limits,
    ModelRetry,
    Reminder,
    RunContext,
    RunResult,
    SessionStartResult,
    StopDecision,
    SuspensionState,
    ToolApproval,
    Turn,
    TurnOutcome,
    UsageLimits,
    await_background_tasks,
)
from dive.errors import DiveError, HookAbort, ToolFatalError
from dive.llm import Model, ModelRequest, ModelResponse, ModelSettings, ToolChoice, Usage
from dive.messages import Message, ToolCall, ToolDefinition, ToolResult, ToolRetryPolicy
from dive.providers import model
from dive.sessions import MemorySessionStore, Session, SessionStore
from dive.tools import (
    FunctionTool,
    Suspend,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolReturn,
    Toolset,
    TypedTool,
    tool,
)
from dive.tracing import MultiTracer, NopTracer, Tracer

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentEvent",
    "CancelToken",
    "DiveError",
    "Durability",
    "Extension",
    "FunctionTool",
    "HookAbort",
    "HookContext",
    "Hooks",
    "IncompleteTurns",
    "Limits",
    "ModelRetry",
    "MemorySessionStore",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "MultiTracer",
    "NopTracer",
    "Reminder",
    "RunContext",
    "RunResult",
    "Session",
    "SessionStartResult",
    "SessionStore",
    "StopDecision",
    "SuspensionState",
    "ToolApproval",
    "Suspend",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolChoice",
    "ToolContext",
    "ToolDefinition",
    "ToolFatalError",
    "ToolResult",
    "ToolRetryPolicy",
    "ToolReturn",
    "Toolset",
    "Tracer",
    "Turn",
    "TurnOutcome",
    "TypedTool",
    "Usage",
    "UsageLimits",
    "__version__",
    "await_background_tasks",
    "errors",
    "llm",
    "messages",
    "model",
    "tool",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
