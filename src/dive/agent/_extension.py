"""Extensions: tools, hooks and rules bundled together, merged once at construction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from dive.agent._hooks import Hooks
from dive.tools import Tool

__all__ = ["Extension"]


@runtime_checkable
class Extension(Protocol):
    """Contributes tools (appended), hooks (after the caller's) and rules (instructions)."""

    def tools(self) -> Sequence[Tool]:
        """Tools to add."""
        ...

    def hooks(self) -> Hooks | None:
        """Hooks to run after the caller's."""
        ...

    def rules(self) -> str | None:
        """Text appended to the instructions after a blank line."""
        ...
