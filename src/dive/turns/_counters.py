"""``TurnCounters``: a turn's counts as one frozen value.

Model calls (pause resends excluded), tool calls whose tool was invoked, iterations (every
model call, pause resends included: ``pre_iteration``'s count) and where the model-call budget
began (a ``stop`` continuation or ``continue_turn`` grants a fresh one).

Records (``Turn``, ``SuspensionState``) store the four counts as flat fields, so their JSON and
their constructors stay as they were; ``record.counters`` reads them as one value. They are
read and written in one place each: :meth:`TurnCounters.of` and :meth:`TurnCounters.fields`.
``TurnState`` holds one and replaces it as the turn counts; its call ledger counts the executed
tool calls, and ``TurnState.counters`` takes that count from the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
    def executed_tool_calls(self) -> int:
        """Tool calls whose tool was invoked so far."""
        ...

    @property
    def iterations(self) -> int:
        """Every model call so far, pause resends included."""
        ...

    @property
    def budget_start(self) -> int:
        """The ``model_calls`` count at which the current budget began."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCounters:
    """A turn's counts as one value (``Turn.counters``, ``SuspensionState.counters``).

    Attributes:
        model_calls: model calls of the turn (pause resends excluded), across suspensions.
        executed_tool_calls: tool calls of the turn whose tool was invoked.
        iterations: every model call of the turn, pause resends included (never fewer than
            ``model_calls``).
        budget_start: the ``model_calls`` count at which the current model-call budget began
            (a ``stop`` continuation or ``continue_turn`` grants a fresh one).
    """

    model_calls: int = 0
    executed_tool_calls: int = 0
    iterations: int = 0
    budget_start: int = 0

    @classmethod
    def of(cls, record: CountedRecord) -> TurnCounters:
        """The counts a stored record carries (``iterations`` at least ``model_calls``).

        Args:
            record: a ``Turn`` or ``SuspensionState``.
        """
        model_calls = record.model_calls
        return cls(
            model_calls=model_calls,
            executed_tool_calls=record.executed_tool_calls,
            iterations=max(record.iterations, model_calls),
            budget_start=record.budget_start,
        )

    def fields(self) -> CountFields:
        """The count fields of a ``Turn`` or ``SuspensionState`` holding these counts."""
        return {
            "model_calls": self.model_calls,
            "executed_tool_calls": self.executed_tool_calls,
            "iterations": self.iterations,
            "budget_start": self.budget_start,
        }

    @property
    def budget_used(self) -> int:
        """Model calls counted against ``max_model_calls_per_turn`` (since a fresh budget)."""
        return self.model_calls - self.budget_start

    def with_fresh_budget(self) -> TurnCounters:
        """The same counts, the model-call budget starting now."""
        return replace(self, budget_start=self.model_calls)
