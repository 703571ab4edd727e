"""dive: one async agent loop with everything a serious agent needs.

The flat public surface re-exports the names most programs use; each concept lives in its own
package (``dive.agent``, ``dive.tools``, ``dive.llm``, ``dive.messages``, ``dive.sessions``,
``dive.testing``).

``import dive`` loads nothing else: each name is imported from its package the first time it
is used (``dive.Agent`` imports ``dive.agent``), so a program pays only for what it touches.
"""

import importlib
import typing

from dive._public import TOP_LEVEL as _TOP_LEVEL
from dive._public import publish as _publish

if typing.TYPE_CHECKING:
    from dive import errors, llm, messages
    from dive.agent import (
        Agent,
        AgentEvent,
        Durability,
        Extension,
        HookContext,
        Hooks,
        IncompleteTurns,
        Limits,
        ModelRetry,
        RunContext,
        RunResult,
        SessionStartResult,
        StopDecision,
        ToolApproval,
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
    from dive.turns import CancelToken, Reminder, SuspensionState, Turn, TurnOutcome

__version__ = "0.1.0"

_MODULES = ("errors", "llm", "messages")

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


def __getattr__(name: str) -> typing.Any:
    """Import a public name from its package on first use (and keep it)."""
    if name in _MODULES:
        value: typing.Any = importlib.import_module(f"dive.{name}")
    elif name in _TOP_LEVEL:
        value = getattr(importlib.import_module(_TOP_LEVEL[name]), name)
        _publish(__name__, {name: value}, [name])
    else:
        raise AttributeError(f"module 'dive' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
