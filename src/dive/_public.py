"""Public names show their public module: ``dive.Agent``, not ``dive.agent._agent.Agent``.

Each package calls :func:`publish` on its ``__all__``. A dataclass's string annotations are
resolved first, in the module that defined it, so validation (pydantic) still finds every
name after the class moved to its public module.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping

__all__ = ["TOP_LEVEL", "publish"]

# The flat surface of ``import dive``: each name and the package that defines it. Classes
# among them show ``dive`` as their module from the moment their package publishes them.
TOP_LEVEL: dict[str, str] = {
    "Agent": "dive.agent",
    "AgentEvent": "dive.agent",
    "CancelToken": "dive.turns",
    "DiveError": "dive.errors",
    "Durability": "dive.agent",
    "Extension": "dive.agent",
    "FunctionTool": "dive.tools",
    "HookAbort": "dive.errors",
    "HookContext": "dive.agent",
    "Hooks": "dive.agent",
    "IncompleteTurns": "dive.agent",
    "Limits": "dive.agent",
    "ModelRetry": "dive.agent",
    "MemorySessionStore": "dive.sessions",
    "Message": "dive.messages",
    "Model": "dive.llm",
    "ModelRequest": "dive.llm",
    "ModelResponse": "dive.llm",
    "ModelSettings": "dive.llm",
    "MultiTracer": "dive.tracing",
    "NopTracer": "dive.tracing",
    "Reminder": "dive.turns",
    "RunContext": "dive.agent",
    "RunResult": "dive.agent",
    "Session": "dive.sessions",
    "SessionStartResult": "dive.agent",
    "SessionStore": "dive.sessions",
    "StopDecision": "dive.agent",
    "SuspensionState": "dive.turns",
    "ToolApproval": "dive.agent",
    "Suspend": "dive.tools",
    "Tool": "dive.tools",
    "ToolAnnotations": "dive.tools",
    "ToolCall": "dive.messages",
    "ToolChoice": "dive.llm",
    "ToolContext": "dive.tools",
    "ToolDefinition": "dive.messages",
    "ToolFatalError": "dive.errors",
    "ToolResult": "dive.messages",
    "ToolRetryPolicy": "dive.messages",
    "ToolReturn": "dive.tools",
    "Toolset": "dive.tools",
    "Tracer": "dive.tracing",
    "Turn": "dive.turns",
    "TurnOutcome": "dive.turns",
    "TypedTool": "dive.tools",
    "Usage": "dive.llm",
    "UsageLimits": "dive.agent",
    "await_background_tasks": "dive.agent",
    "model": "dive.providers",
    "tool": "dive.tools",
}


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _resolve(cls: type) -> None:
    hints = typing.get_type_hints(cls, include_extras=True)
    own: dict[str, object] = vars(cls).get("__annotations__", {})
    for name in own:
        if name in hints:
            own[name] = hints[name]
    for f in dataclasses.fields(cls):
        if f.name in hints:
            f.type = hints[f.name]


def publish(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Set ``__module__`` of the classes in ``names`` to ``module``.

    Only classes defined in a private module (or re-exported by the top-level ``dive``) move;
    a name of ``dive``'s flat surface moves to ``dive`` when its defining package publishes it.
    """
    top = module == "dive"
    for name in names:
        obj = namespace.get(name)
        if not isinstance(obj, type) or not obj.__module__.startswith("dive"):
            continue
        if not (top or _private(obj.__module__)):
            continue
        target = "dive" if TOP_LEVEL.get(name) == module else module
        if dataclasses.is_dataclass(obj):
            try:
                _resolve(obj)
            except NameError:
                continue  # a name only known to the type checker: keep the defining module
        obj.__module__ = target
