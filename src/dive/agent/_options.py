"""Grouped agent settings: limits, incomplete-turn handling and durability."""

from __future__ import annotations

from dataclasses import dataclass

from dive.errors import UserError

__all__ = ["Durability", "IncompleteTurns", "Limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Per-turn limits, in explicit units.

    Attributes:
        max_model_calls_per_turn: model calls a turn may make (pause resends excluded).
        max_tool_calls_per_turn: tool calls a turn may execute; None is unbounded.
        max_pause_continuations: ``pause_turn`` resends in a row before giving up.
        response_timeout: seconds of active execution per invocation; None disables.
        force_final_answer: on the last allowed model call, ask for a final answer and send
            tool choice ``none``.
        max_tool_retries: times in a row one tool may raise ``ModelRetry`` (each sends its
            message to the model to try again); the next such call fails like a tool error.
            A call of the tool that returns resets its count.
    """

    max_model_calls_per_turn: int = 100
    max_tool_calls_per_turn: int | None = None
    max_pause_continuations: int = 10
    response_timeout: float | None = 1800.0
    force_final_answer: bool = True
    max_tool_retries: int = 1

    def __post_init__(self) -> None:
        if self.max_model_calls_per_turn < 1:
            raise UserError("limits.max_model_calls_per_turn must be at least 1")
        if self.max_tool_calls_per_turn is not None and self.max_tool_calls_per_turn < 0:
            raise UserError("limits.max_tool_calls_per_turn must not be negative")
        if self.max_pause_continuations < 0:
            raise UserError("limits.max_pause_continuations must not be negative")
        if self.response_timeout is not None and self.response_timeout <= 0:
            raise UserError("limits.response_timeout must be > 0 seconds (or None)")
        if self.max_tool_retries < 0:
            raise UserError("limits.max_tool_retries must not be negative")


@dataclass(frozen=True, slots=True, kw_only=True)
class IncompleteTurns:
    """How incomplete turns are closed and saved.

    Attributes:
        drop_partial_text: leave out the text the model was still writing when the turn ended.
        save_timeout: seconds allowed to save an incomplete turn.
        require_reconcile: refuse new input (``UnreconciledToolCallsError``) while the latest
            outcome's next step is ``reconcile``.
    """

    drop_partial_text: bool = False
    save_timeout: float = 30.0
    require_reconcile: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Durability:
    """Step checkpoints and session claims (multi-process use).

    Attributes:
        checkpoint_steps: save a running record after each model response and tool call, so another
            process can close a turn whose process died.
        claim: claim the session while a turn runs, so two processes never run one session.
        claim_ttl: seconds a claim lasts unless renewed (it is renewed while the turn runs).
        owner: the claim's owner id (default: one per process).
    """

    checkpoint_steps: bool = False
    claim: bool = False
    claim_ttl: float = 30.0
    owner: str | None = None
