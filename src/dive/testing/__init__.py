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
