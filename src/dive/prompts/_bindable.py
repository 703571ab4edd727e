"""``Bindable``: what a request does to a prompt; ``NoBindings`` for requests without data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dive.prompts._prompt import Prompt

__all__ = ["Bindable", "NoBindings"]


@runtime_checkable
class Bindable(Protocol):
    """Something that binds its data into a prompt (an executor's request type)."""

    def bind(self, prompt: Prompt) -> Prompt:
        """Return ``prompt`` with this object's values bound (a new prompt).

        Args:
            prompt: the prompt to bind into.
        """
        ...


@dataclass(frozen=True, slots=True)
class NoBindings:
    """A ``Bindable`` with nothing to bind: ``bind`` returns the prompt as is."""

    def bind(self, prompt: Prompt) -> Prompt:
        """Return ``prompt`` unchanged.

        Args:
            prompt: the prompt.
        """
        return prompt
