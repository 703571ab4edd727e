"""``TurnView``: the read-only view of a turn that hooks see as ``ctx.turn``.

It is a snapshot taken when the hook point fires, never the live state. Its ``outcome`` may
be replaced only where the hook table allows it (``on_incomplete_turn``); anywhere else the
assignment raises ``HookPolicyError``.
"""

from __future__ import annotations

from dive.errors import HookPolicyError
from dive.llm import Usage
from dive.messages import Message
from dive.turns._records import ToolCallRecord, TurnOrigin, TurnOutcome, TurnStatus

__all__ = ["TurnView"]


class TurnView:
    """A turn as a hook sees it: id, status, messages, calls, usage, counts and outcome.

    Args:
        outcome_writable: let a hook replace ``outcome`` (``on_incomplete_turn`` only).
    """

    __slots__ = (
        "_id",
        "_messages",
        "_model_calls",
        "_origin",
        "_outcome",
        "_outcome_writable",
        "_status",
        "_tool_calls",
        "_usage",
    )

    def __init__(
        self,
        *,
        id: str,
        origin: TurnOrigin,
        status: TurnStatus,
        messages: tuple[Message, ...],
        tool_calls: tuple[ToolCallRecord, ...],
        usage: Usage,
        model_calls: int,
        outcome: TurnOutcome | None = None,
        outcome_writable: bool = False,
    ) -> None:
        self._id = id
        self._origin = origin
        self._status: TurnStatus = status
        self._messages = messages
        self._tool_calls = tool_calls
        self._usage = usage
        self._model_calls = model_calls
        self._outcome = outcome
        self._outcome_writable = outcome_writable

    @property
    def id(self) -> str:
        """The turn id."""
        return self._id

    @property
    def origin(self) -> TurnOrigin:
        """What started the turn."""
        return self._origin

    @property
    def status(self) -> TurnStatus:
        """``running`` while the turn runs; the ending's status at end hooks."""
        return self._status

    @property
    def messages(self) -> tuple[Message, ...]:
        """The turn's recorded messages so far."""
        return self._messages

    @property
    def tool_calls(self) -> tuple[ToolCallRecord, ...]:
        """A record for every call of the turn so far."""
        return self._tool_calls

    @property
    def usage(self) -> Usage:
        """Usage of the whole turn so far."""
        return self._usage

    @property
    def model_calls(self) -> int:
        """Model calls of the turn so far (pause resends excluded)."""
        return self._model_calls

    @property
    def outcome(self) -> TurnOutcome | None:
        """How an incomplete turn ended (``on_incomplete_turn`` may replace it)."""
        return self._outcome

    @outcome.setter
    def outcome(self, value: TurnOutcome) -> None:
        if not self._outcome_writable:
            raise HookPolicyError("turn.outcome can be replaced only by on_incomplete_turn hooks")
        if not isinstance(value, TurnOutcome):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise HookPolicyError(
                f"turn.outcome must be a TurnOutcome (use dataclasses.replace), not "
                f"{type(value).__name__}"
            )
        self._outcome = value

    def __repr__(self) -> str:
        return f"TurnView(id={self._id!r}, status={self._status!r}, messages={len(self._messages)})"
