"""Closing an incomplete turn: the one pure projection from record to sendable history.

``close_turn(messages, outcome)`` answers every unanswered call of the last tool group in call
order — by its own result when one was recorded, else "Not run" (``not_started``) or
"Unknown result" (``unknown``) — then appends the outcome note, a ``turn-incomplete``
reminder whose details are the outcome JSON. The result always passes
``validate_complete_turns``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from dive.messages import UNKNOWN_RESULT_TEXT, Message, TextBlock, ToolCall, ToolResult
from dive.messages.codec import decode
from dive.turns._records import IncompleteReason, NextStep, ToolCallRecord, TurnOutcome
from dive.turns._reminders import (
    Reminder,
    is_reminder,
    reminder_details,
    reminder_message,
)

__all__ = [
    "DEFAULT_NEXT",
    "HALTED_TEXT",
    "NOT_RUN_TEXT",
    "UNKNOWN_TEXT",
    "advise",
    "answer",
    "answer_open_calls",
    "close_turn",
    "find_latest_turn_outcome",
    "find_turn_outcome",
    "open_group_calls",
    "outcome_note",
]

NOT_RUN_TEXT = "Not run: the turn ended before this call started. It had no effect."
UNKNOWN_TEXT = UNKNOWN_RESULT_TEXT
HALTED_TEXT = "Not executed: an earlier tool call in this response failed."

DEFAULT_NEXT: Mapping[str, NextStep] = {
    "canceled": "input",
    "deadline": "continue",
    "provider_error": "continue",
    "stream_interrupted": "continue",
    "hook_abort": "input",
    "callback_error": "continue",
    "error": "input",
    "output_limit": "continue",
    "context_limit": "input",
    "iteration_limit": "continue",
    "provider_stopped": "continue",
    "pause": "continue",
    "process_exit": "continue",
    "usage_limit": "input",
}

_WHAT: Mapping[str, str] = {
    "canceled": "The previous turn was stopped by the user before it finished.",
    "deadline": "The previous turn stopped because the turn's time limit was reached.",
    "provider_error": "The previous turn stopped because the model provider returned an error.",
    "stream_interrupted": "The previous turn stopped because the model's response was cut off.",
    "hook_abort": "The previous turn was stopped by an application hook.",
    "callback_error": "The previous turn stopped because the application's event handler failed.",
    "error": "The previous turn stopped because of an error.",
    "output_limit": "The previous turn stopped because the output token limit was reached.",
    "context_limit": "The previous turn stopped because the context window was exceeded.",
    "iteration_limit": "The previous turn stopped because it reached its tool-use limit.",
    "provider_stopped": "The previous turn stopped because the model provider ended it early.",
    "pause": "The previous turn stopped after too many pauses.",
    "process_exit": "The previous turn stopped because the process running it exited.",
    "usage_limit": "The previous turn stopped because its usage budget was reached.",
}

_CANCELED_TAIL = (
    " Wait for the user's next instruction rather than resuming the stopped work on your own."
)


def advise(reason: IncompleteReason, calls: Sequence[ToolCallRecord]) -> NextStep:
    """Default advice for ``reason``, forced to ``reconcile`` by an unknown non-read-only call.

    A record's ``reconcile`` flag says whether its tool is not read-only.

    Args:
        reason: why the turn ended.
        calls: the records of the batch in flight.
    """
    if any(c.state == "unknown" and c.reconcile for c in calls):
        return "reconcile"
    return DEFAULT_NEXT[reason]


def outcome_note(outcome: TurnOutcome) -> Reminder:
    """The ``turn-incomplete`` reminder for ``outcome``.

    Args:
        outcome: the outcome the note carries as its ``details``.
    """
    text = _WHAT[outcome.reason] + (
        " Everything above this note, including every tool result, happened as shown."
        " Do not repeat completed steps or assume unfinished ones happened."
    )
    if outcome.reason == "canceled":
        text += _CANCELED_TAIL
    if any(c.state != "completed" for c in outcome.tool_calls):
        text += (
            ' A result starting "Not run" means that call never started and had no effect;'
            ' "Unknown result" means it may have taken effect, so check before repeating it.'
        )
    return Reminder(name="turn-incomplete", content=text, details=outcome.to_dict())


def answer(call: ToolCall, state: str, *, timeout_text: str | None = None) -> Message:
    """The tool message answering ``call`` in ``state`` without its own result."""
    text = NOT_RUN_TEXT if state in ("not_started", "waiting") else (timeout_text or UNKNOWN_TEXT)
    return Message(
        role="tool",
        name=call.name,
        content=(
            ToolResult(
                tool_call_id=call.id,
                name=call.name,
                content=(TextBlock(text=text),),
                is_error=True,
            ),
        ),
    )


def open_group_calls(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The calls of the last tool group when some of them are unanswered, else ``()``.

    Args:
        messages: a turn's messages, oldest first.
    """
    i = _open_group(messages)
    return () if i is None else messages[i].tool_calls


def _open_group(messages: Sequence[Message]) -> int | None:
    """Index of the last assistant message whose calls are not all answered."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "assistant" and m.tool_calls:
            following = 0
            for r in messages[i + 1 :]:
                if r.role != "tool":
                    break
                following += 1
            return i if following < len(m.tool_calls) else None
        if m.role not in ("tool", "user"):
            return None
    return None


def answer_open_calls(
    messages: Sequence[Message], states: Mapping[str, str], *, extra: Sequence[Message] = ()
) -> list[Message]:
    """``messages`` with the last tool group's missing results filled in call order.

    Args:
        messages: a turn's messages, oldest first.
        states: the state of each unanswered call by id (``not_started`` or ``waiting`` read "Not
            run", anything else "Unknown result").
        extra: messages appended after the filled-in results (hook context, for example).
    """
    out = list(messages)
    i = _open_group(out)
    if i is None:
        return out + list(extra)
    calls = out[i].tool_calls
    tail = out[i + 1 :]
    results: dict[str, Message] = {}
    others: list[Message] = []
    for m in tail:
        r = m.tool_result
        if m.role == "tool" and r is not None and r.tool_call_id not in results:
            results[r.tool_call_id] = m
        else:
            others.append(m)
    group = [results.get(c.id) or answer(c, states.get(c.id, "not_started")) for c in calls]
    return out[: i + 1] + group + others + list(extra)


def close_turn(
    messages: Sequence[Message],
    outcome: TurnOutcome,
    *,
    recorded_reminders: Sequence[Message] = (),
    at: datetime | None = None,
) -> list[Message]:
    """Answer every unanswered call, then append recorded reminders and the outcome note.

    Args:
        messages: the turn's messages, oldest first.
        outcome: how the turn ended; its note is appended last.
        recorded_reminders: reminder messages queued while the turn ended, placed before the note.
        at: the note's timestamp (default: now).
    """
    states = {c.id: c.state for c in outcome.tool_calls}
    closed = answer_open_calls(messages, states, extra=recorded_reminders)
    closed.append(reminder_message(outcome_note(outcome), at=at))
    return closed


def find_turn_outcome(message: Message) -> TurnOutcome | None:
    """The outcome carried by a ``turn-incomplete`` note, or None.

    Args:
        message: any message.
    """
    if not is_reminder(message, "turn-incomplete"):
        return None
    details = reminder_details(message)
    return None if details is None else decode(TurnOutcome, dict(details))


def find_latest_turn_outcome(messages: Sequence[Message]) -> TurnOutcome | None:
    """The outcome of the latest ``turn-incomplete`` note in ``messages``, or None.

    Args:
        messages: a history, oldest first.
    """
    for m in reversed(messages):
        found = find_turn_outcome(m)
        if found is not None:
            return found
    return None
