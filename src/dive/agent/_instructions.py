"""Instructions: a string, functions of the run's context, or a list of both.

Functions are evaluated before every model call (sync or async) and the parts are joined
with blank lines. A function that returns the same text as last time leaves the prompt, and
with it the provider's prompt-cache prefix, unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from typing_extensions import TypeVar

from dive.agent._context import RunContext
from dive.errors import UserError

__all__ = ["Instructions", "InstructionsFn", "InstructionsSpec"]

DepsT = TypeVar("DepsT", default=None)

InstructionsFn: TypeAlias = Callable[[RunContext[DepsT]], str | Awaitable[str]]
"""``fn(ctx) -> str``, sync or async."""

Instructions: TypeAlias = str | InstructionsFn[DepsT] | Sequence[str | InstructionsFn[DepsT]]
"""What ``Agent(instructions=...)`` takes."""


class InstructionsSpec:
    """An agent's instructions, split into static text and functions."""

    def __init__(self, instructions: Instructions[Any]) -> None:
        items: list[str | InstructionsFn[Any]]
        if isinstance(instructions, str) or callable(instructions):
            items = [instructions]
        else:
            items = list(instructions)
        for item in items:
            if not isinstance(item, str) and not callable(item):
                raise UserError(
                    "instructions must be a string, a function of the RunContext, or a list "
                    f"of those, not {type(item).__name__}"
                )
        self.parts: tuple[str | InstructionsFn[Any], ...] = tuple(items)
        self.dynamic = any(not isinstance(p, str) for p in items)

    def static_text(self) -> str:
        """The text of the string parts (all of it when nothing is dynamic)."""
        return "\n\n".join(p for p in self.parts if isinstance(p, str) and p)

    async def render(self, ctx: RunContext[Any]) -> str:
        """Evaluate every part for one model call."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                text = part
            else:
                value: Any = part(ctx)
                if inspect.isawaitable(value):
                    value = await value
                if not isinstance(value, str):
                    name = getattr(part, "__name__", repr(part))
                    raise UserError(
                        f"instructions function {name} returned {type(value).__name__}; it "
                        "must return a string"
                    )
                text = value
            if text:
                out.append(text)
        return "\n\n".join(out)

    def __str__(self) -> str:
        return self.static_text()
