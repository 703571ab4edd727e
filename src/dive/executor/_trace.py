"""``ExecutionTrace``: what one ``execute`` did, for evaluation and debugging.

Rounds (one model round-trip each, with usage and cache buckets), every tool call with its
outcome (``recoverable`` for rejected submissions, ``terminal`` for the committing call,
``seeded`` for seed calls), reasoning when payloads are captured, the result or the error.
It round-trips through JSON (``to_json`` / ``from_json``). Only the executor writes to it,
through its methods.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dive.llm import Usage

__all__ = ["ExecutionTrace", "TracedCall", "TracedRound"]


def _now() -> datetime:
    return datetime.now(UTC)


def _trace_id() -> str:
    return f"{_now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


class TracedCall(BaseModel):
    """One tool call and how it ended."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    reasoning: str | None = None
    result: Any = None
    error: str | None = None
    recoverable: bool = False
    terminal: bool = False
    seeded: bool = False
    round: int | None = None
    start_time: datetime = Field(default_factory=_now)
    end_time: datetime | None = None


class TracedRound(BaseModel):
    """One model round-trip."""

    model_config = ConfigDict(extra="forbid")
    index: int
    model: str | None = None
    provider: str | None = None
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    reasoning_tokens: int | None = None
    cost: float | None = None
    start_time: datetime = Field(default_factory=_now)
    end_time: datetime | None = None
    errors: list[str] = Field(default_factory=lambda: list[str]())
    failed: bool = False
    response: Any = None
    """The response's content blocks (with ``capture_payloads``)."""


class ExecutionTrace(BaseModel):
    """The record of one execution (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(default_factory=_trace_id)
    otel_trace_id: str | None = None
    input_prompt: str = ""
    tool_calls: list[TracedCall] = Field(default_factory=lambda: list[TracedCall]())
    rounds: list[TracedRound] = Field(default_factory=lambda: list[TracedRound]())
    reasoning: list[dict[str, Any]] = Field(default_factory=lambda: list[dict[str, Any]]())
    result: Any = None
    error: str | None = None
    start_time: datetime = Field(default_factory=_now)
    end_time: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    agent_name: str | None = None
    model: str | None = None
    suspended: bool = False
    suspension_reason: str | None = None

    # --- totals ---------------------------------------------------------------------------

    @property
    def cost(self) -> float | None:
        """Dollars over every round; None when some round's price is unknown.

        A round that failed without a response (nothing billed) adds nothing.
        """
        total = 0.0
        for r in self.rounds:
            if r.failed and r.cost is None:
                continue
            if r.cost is None:
                return None
            total += r.cost
        return total

    @property
    def input_tokens(self) -> int:
        """Input tokens over every round (uncached, cache writes and cache reads)."""
        return sum(
            r.input_tokens + r.cache_read_tokens + r.cache_creation_tokens for r in self.rounds
        )

    @property
    def output_tokens(self) -> int:
        """Output tokens over every round."""
        return sum(r.output_tokens for r in self.rounds)

    @property
    def usage(self) -> Usage:
        """The rounds' usage summed (``requests``: the model calls that answered)."""
        reasoning = [r.reasoning_tokens for r in self.rounds if r.reasoning_tokens is not None]
        return Usage(
            input_tokens=sum(r.input_tokens for r in self.rounds),
            output_tokens=self.output_tokens,
            cache_creation_input_tokens=sum(r.cache_creation_tokens for r in self.rounds),
            cache_read_input_tokens=sum(r.cache_read_tokens for r in self.rounds),
            reasoning_tokens=sum(reasoning) if reasoning else None,
            cost=self.cost,
            requests=sum(1 for r in self.rounds if not r.failed),
        )

    # --- writing (the executor only) ------------------------------------------------------

    def add_call(self, call: TracedCall) -> TracedCall:
        """Record a call as it starts.

        Args:
            call: the call as it starts.
        """
        self.tool_calls.append(call)
        return call

    def add_round(self, round: TracedRound) -> TracedRound:
        """Record a model round-trip.

        Args:
            round: the round-trip (usage, cache buckets, cost).
        """
        if self.model is None:
            self.model = round.model
        self.rounds.append(round)
        return round

    def add_reasoning(self, round: int, thinking: str | None, *, redacted: bool = False) -> None:
        """Record a round's reasoning (empty thinking is skipped).

        Args:
            round: the round it belongs to.
            thinking: the thinking text, or None.
            redacted: the provider sent the reasoning redacted.
        """
        if redacted:
            self.reasoning.append({"round": round, "redacted": True})
        elif thinking:
            self.reasoning.append({"round": round, "thinking": thinking})

    def finish(self, *, result: Any = None, error: BaseException | None = None) -> None:
        """Complete the trace with the result or the error.

        Args:
            result: the committed response, if any.
            error: what ended the run, if it failed.
        """
        self.result = result
        self.error = f"{type(error).__name__}: {error}" if error is not None else None
        self.end_time = _now()

    # --- JSON -------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The trace as JSON text."""
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str | bytes) -> ExecutionTrace:
        """A trace from ``to_json`` output.

        Args:
            text: what ``to_json`` returned.
        """
        return cls.model_validate_json(text)
