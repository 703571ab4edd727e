"""``TurnCounters``: a turn's counts as one frozen value.

Model calls (pause resends excluded), iterations (every model call, pause resends included:
``pre_iteration``'s count) and where the model-call budget began (a ``stop`` continuation or
``continue_turn`` grants a fresh one). ``TurnState`` holds one and replaces it as the turn
counts; records carry it as their four count fields, read and written in one place each
(:meth:`TurnCounters.of`, :meth:`TurnCounters.fields`) together with the ledger's count of
executed tool calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypedDict

__all__ = ["CountFields", "CountedRecord", "TurnCounters"]


class CountFields(TypedDict):
    """The four count fields of a ``Turn`` or ``SuspensionState``."""

    model_calls: int
    executed_tool_calls: int
    iterations: int
    budget_start: int


class CountedRecord(Protocol):
    """A record carrying a turn's counts (``Turn``, ``SuspensionState``)."""

    @property
    def model_calls(self) -> int:
        """Model calls made so far."""
        ...

    @property
    def iterations(self) -> int:
        """Every model call so far, pause resends included."""
        ...

    @property
    def budget_start(self) -> int:
        """The ``model_calls`` count at which the current budget began."""
        ...


@dataclass(frozen=True, slots=True)
class TurnCounters:
    """A turn's counts (see the module docstring)."""

    model_calls: int = 0
    iterations: int = 0
    budget_start: int = 0

    @classmethod
    def of(cls, record: CountedRecord) -> TurnCounters:
        """The counts a stored record carries.

        Args:
            record: a ``Turn`` or ``SuspensionState``.
        """
        model_calls = record.model_calls
        return cls(model_calls, max(record.iterations, model_calls), record.budget_start)

    def fields(self, executed_tool_calls: int) -> CountFields:
        """The count fields of a ``Turn`` or ``SuspensionState`` (with the ledger's count).

        Args:
            executed_tool_calls: the ledger's count of calls whose tool was invoked.
        """
        return {
            "model_calls": self.model_calls,
            "executed_tool_calls": executed_tool_calls,
            "iterations": self.iterations,
            "budget_start": self.budget_start,
        }

    @property
    def budget_used(self) -> int:
        """Model calls counted against ``max_model_calls_per_turn`` (since a fresh budget)."""
        return self.model_calls - self.budget_start

    def with_fresh_budget(self) -> TurnCounters:
        """The same counts, the model-call budget starting now."""
        return TurnCounters(self.model_calls, self.iterations, self.model_calls)
