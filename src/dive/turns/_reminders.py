"""Reminders: short system notes carried in the conversation.

A contextual reminder is rendered as user content
``<system-reminder name="…">…</system-reminder>``; an operator reminder is marked so that a
provider may use a native system/developer role where its position allows, and is otherwise
rendered the same way. ``details`` are stored in the message metadata, never rendered.
Recorded reminders are saved with the turn; model-only ones live for one invocation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from dive.errors import UserError
from dive.messages import Message, TextBlock
from dive.messages.codec import JSONValue

__all__ = [
    "RESERVED_REMINDERS",
    "Reminder",
    "find_latest_reminder",
    "find_reminder",
    "is_reminder",
    "remove_reminder",
    "reminder_message",
    "strip_reminders",
]

RESERVED_REMINDERS = frozenset(
    {"turn-incomplete", "turn-continue", "stop-continuation", "background-tasks", "skills"}
)
_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_KEY = "dive.reminder"
_TIER = "dive.reminder.tier"
_DETAILS = "dive.reminder.details"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reminder:
    """A named note for the model; ``details`` are stored, never rendered.

    Attributes:
        name: lowercase letters, digits and ``-``, starting with a letter; lookups use it.
        content: the text the model sees inside the ``<system-reminder>`` tag.
        tier: ``contextual`` (about the conversation) or ``operator`` (from the application).
        details: JSON kept with the reminder for programs, never shown to the model.
    """

    name: str
    content: str
    tier: Literal["contextual", "operator"] = "contextual"
    details: JSONValue = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise UserError(
                f"reminder name {self.name!r} is invalid: use lowercase letters, digits and '-', "
                "starting with a letter"
            )
        if self.tier not in ("contextual", "operator"):
            raise UserError(f"reminder tier must be contextual or operator, not {self.tier!r}")

    def render(self) -> str:
        """The text the model sees."""
        return f'<system-reminder name="{self.name}">{self.content}</system-reminder>'


def reminder_message(reminder: Reminder, *, at: datetime | None = None) -> Message:
    """The user-role message that carries ``reminder``.

    Args:
        reminder: the reminder to carry.
        at: when the message is created (default: now).
    """
    meta = {_KEY: reminder.name, _TIER: reminder.tier}
    if reminder.details is not None:
        meta[_DETAILS] = json.dumps(reminder.details, separators=(",", ":"), sort_keys=True)
    return Message(
        role="user",
        content=(TextBlock(text=reminder.render()),),
        metadata=meta,
        created_at=at or datetime.now(UTC),
    )


def is_reminder(message: Message, name: str | None = None) -> bool:
    """True if ``message`` carries a reminder (named ``name`` when given).

    Args:
        message: any message.
        name: only a reminder of this name counts; None: any reminder.
    """
    found = message.metadata.get(_KEY)
    return found is not None and (name is None or found == name)


def _decode(message: Message) -> Reminder:
    name = message.metadata[_KEY]
    prefix = f'<system-reminder name="{name}">'
    text = message.text.removeprefix(prefix).removesuffix("</system-reminder>")
    raw = message.metadata.get(_DETAILS)
    tier = message.metadata.get(_TIER, "contextual")
    return Reminder(
        name=name,
        content=text,
        tier="operator" if tier == "operator" else "contextual",
        details=json.loads(raw) if raw is not None else None,
    )


def find_reminder(messages: Sequence[Message], name: str) -> Reminder | None:
    """The first reminder named ``name``, or None.

    Args:
        messages: a history, oldest first.
        name: the reminder's name.
    """
    for m in messages:
        if is_reminder(m, name):
            return _decode(m)
    return None


def find_latest_reminder(messages: Sequence[Message], name: str) -> Reminder | None:
    """The last reminder named ``name``, or None.

    Args:
        messages: a history, oldest first.
        name: the reminder's name.
    """
    for m in reversed(messages):
        if is_reminder(m, name):
            return _decode(m)
    return None


def strip_reminders(messages: Sequence[Message]) -> list[Message]:
    """The messages without any reminder message.

    Args:
        messages: a history.
    """
    return [m for m in messages if not is_reminder(m)]


def remove_reminder(messages: Sequence[Message], name: str) -> list[Message]:
    """The messages without reminders named ``name``.

    Args:
        messages: a history.
        name: the reminder's name.
    """
    return [m for m in messages if not is_reminder(m, name)]


def reminder_details(message: Message) -> Mapping[str, JSONValue] | None:
    """The decoded details of a reminder message, if it has any object details.

    Args:
        message: a reminder message.
    """
    raw = message.metadata.get(_DETAILS)
    if raw is None:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]
