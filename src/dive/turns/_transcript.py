"""``Transcript``: a running turn's messages, changed only through its own methods.

It owns the record (full fidelity: what is saved), the model-facing working set (what hooks
may rewrite), the messages shown to the model but not saved, the system prompt of the next
model call, and reminders queued for the next iteration boundary. Every message the turn
adds goes through :meth:`Transcript.add`, so record and working set never drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from dive.messages import Message, ServerToolCall, ServerToolResult
from dive.turns._reminders import Reminder, reminder_message

__all__ = ["Transcript"]


class Transcript:
    """A running turn's messages; see the module docstring.

    Args:
        history: the messages before the turn (the working set starts as a copy).
        system_prompt: the rendered system prompt.
        clock: gives the current time (the runner's clock) for reminders it delivers.
    """

    __slots__ = (
        "_clock",
        "_history",
        "_model_only",
        "_queued",
        "_record",
        "_rendered_prompt",
        "_system_prompt",
        "_working",
    )

    def __init__(
        self, history: Sequence[Message], system_prompt: str, clock: Callable[[], datetime]
    ) -> None:
        self._clock = clock
        self._system_prompt = system_prompt
        self._rendered_prompt = system_prompt
        self._record: list[Message] = []
        self._working: list[Message] = list(history)
        self._model_only: list[Message] = []
        self._history = tuple(history)
        self._queued: list[tuple[Reminder, bool]] = []

    @property
    def history(self) -> tuple[Message, ...]:
        """The history before the turn, as the turn began (what ``RunResult`` reports)."""
        return self._history

    @property
    def record(self) -> Sequence[Message]:
        """The turn's messages as recorded (what is saved)."""
        return self._record

    def record_tuple(self) -> tuple[Message, ...]:
        """The record as a tuple (a snapshot for a turn record)."""
        return tuple(self._record)

    @property
    def working(self) -> Sequence[Message]:
        """What the model is sent: history, the record and model-only messages."""
        return self._working

    @property
    def system_prompt(self) -> str:
        """The system prompt of the next model call."""
        return self._system_prompt

    def set_system_prompt(self, text: str) -> None:
        """Replace the system prompt (``pre_generation`` / ``pre_iteration`` hooks).

        Args:
            text: the new system prompt.
        """
        self._system_prompt = text

    def render_system_prompt(self, prompt: str) -> None:
        """Apply a freshly rendered prompt (dynamic instructions, before a model call).

        Unchanged text changes nothing (the cache prefix holds). When hooks edited the
        prompt around the previous rendering, only that rendering is replaced; when they
        rewrote it entirely, their text stays.

        Args:
            prompt: the instructions as just rendered.
        """
        last = self._rendered_prompt
        if prompt == last:
            return
        if self._system_prompt == last:
            self._system_prompt = prompt
        elif last and last in self._system_prompt:
            self._system_prompt = self._system_prompt.replace(last, prompt, 1)
        self._rendered_prompt = prompt

    def add(self, message: Message) -> None:
        """Append a message to the record and the working set.

        Args:
            message: the message to append.
        """
        self._record.append(message)
        self._working.append(message)

    def add_model_only(self, message: Message) -> None:
        """Append a message the model sees during this invocation but that is not saved.

        Args:
            message: the message to show the model.
        """
        self._model_only.append(message)
        self._working.append(message)

    def seed(self, messages: Sequence[Message], *, persist: bool) -> None:
        """``session_start`` messages: recorded with the turn, or for the model only.

        Args:
            messages: what the ``session_start`` hook returned.
            persist: record them with the turn (True) or show them to the model only.
        """
        for m in messages:
            if persist:
                self.add(m)
            else:
                self._working.append(m)

    def replace_working(self, messages: Sequence[Message]) -> None:
        """Replace the model-facing working set (a hook's rewrite; the record is kept).

        Args:
            messages: the new working set; it must be a valid history.
        """
        self._working = list(messages)

    def reappend_model_only(self) -> None:
        """Re-append this invocation's model-only messages at the tail (after a ``stop``)."""
        self._working.extend(self._model_only)

    def drop_unanswered_server_calls(self) -> None:
        """After giving up on a pause: drop the paused messages' unanswered server calls."""
        start = len(self._record)
        while start > 0 and self._record[start - 1].role == "assistant":
            start -= 1
        tail = self._record[start:]
        answered = {
            b.tool_use_id for m in tail for b in m.content if isinstance(b, ServerToolResult)
        }
        rebuilt: list[Message] = []
        for m in tail:
            kept = tuple(
                b for b in m.content if not (isinstance(b, ServerToolCall) and b.id not in answered)
            )
            if kept:
                rebuilt.append(m if kept == m.content else replace(m, content=kept))
        if [id(m) for m in rebuilt] == [id(m) for m in tail]:
            return
        del self._record[start:]
        self._working = [m for m in self._working if not any(m is t for t in tail)]
        for m in rebuilt:
            self.add(m)

    def close_record(self, messages: Sequence[Message]) -> None:
        """Replace the record with its closed form (the ending only).

        Args:
            messages: the closed messages (every call answered, the outcome note last).
        """
        self._record = list(messages)

    # --- reminders -----------------------------------------------------------------------------

    def queue_reminders(self, items: Sequence[tuple[Reminder, bool]]) -> None:
        """Queue reminders (``recorded`` flag) for the next iteration boundary.

        Args:
            items: each reminder with its ``recorded`` flag (True: saved with the turn; False: shown
                to the model only).
        """
        self._queued.extend(items)

    def flush_reminders(self) -> None:
        """Deliver queued reminders at an iteration boundary."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        at = self._clock()
        for reminder, recorded in queued:
            msg = reminder_message(reminder, at=at)
            if recorded:
                self.add(msg)
            else:
                self.add_model_only(msg)

    def take_recorded_reminders(self) -> list[Message]:
        """Queued recorded reminders as messages (model-only ones are dropped)."""
        queued, self._queued = self._queued, []
        if not queued:
            return []
        at = self._clock()
        return [reminder_message(r, at=at) for r, recorded in queued if recorded]
