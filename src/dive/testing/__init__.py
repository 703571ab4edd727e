"""Test doubles users need: a scripted model (and, later, wire simulators)."""

from dive.testing._scripted import (
    ScriptedModel,
    ScriptExhaustedError,
    ScriptItem,
    Step,
    call,
    text,
    tool_use,
)

__all__ = [
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedModel",
    "Step",
    "call",
    "text",
    "tool_use",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
