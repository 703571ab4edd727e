"""dive run events → AG-UI events.

``RUN_STARTED``, then (``STATE_SNAPSHOT`` of the input state), per assistant message its
text as ``TEXT_MESSAGE_START`` / ``_CONTENT`` (each streamed delta, or the whole text when
the model does not stream) / ``_END``, per tool call ``TOOL_CALL_START`` / ``_ARGS`` /
``_END`` and its ``TOOL_CALL_RESULT``, a ``STATE_SNAPSHOT`` whenever a tool changed the
state, and last ``RUN_FINISHED`` (success with the output; interrupt with one interrupt per
pending call; cancelled) or ``RUN_ERROR`` (an incomplete turn: its reason and error).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from dive.agent import (
    AgentEvent,
    MessageEvent,
    ModelStreamEvent,
    RunResult,
    ToolCallEvent,
)
from dive.agent import ToolCallResultEvent as DiveResultEvent
from dive.llm import ContentBlockDelta, TextDelta
from dive.messages.codec import to_jsonable
from dive.turns import PendingToolCall

__all__ = ["APPROVAL_SCHEMA", "Translator"]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "message": {"type": "string"}},
    "required": ["approved"],
}
"""The answer an approval interrupt expects."""


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _dump(state: Any) -> str:
    return json.dumps(state, sort_keys=True, default=str)


class Translator:
    """Turns one run's dive events into AG-UI events."""

    def __init__(self, thread_id: str, run_id: str, state: dict[str, Any]) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._state = state
        self._shown = _dump(state.get("state"))
        self._open: str | None = None  # the text message being streamed
        self._streamed = False  # the current model message streamed its text
        self._last_message: str | None = None

    def start(self, *, with_state: bool) -> list[BaseEvent]:
        events: list[BaseEvent] = [RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]
        if with_state:
            events.append(StateSnapshotEvent(snapshot=self._state.get("state")))
        return events

    def event(self, event: AgentEvent) -> list[BaseEvent]:
        match event:
            case ModelStreamEvent(event=ContentBlockDelta(delta=TextDelta(text=text))):
                return self._delta(text)
            case MessageEvent(message=message):
                return self._message_done(message.text)
            case ToolCallEvent(call=call):
                args = json.dumps(dict(call.arguments), ensure_ascii=False)
                return [
                    ToolCallStartEvent(
                        tool_call_id=call.id,
                        tool_call_name=call.name,
                        parent_message_id=self._last_message,
                    ),
                    ToolCallArgsEvent(tool_call_id=call.id, delta=args),
                    ToolCallEndEvent(tool_call_id=call.id),
                ]
            case DiveResultEvent(call=call, result=result) if result is not None:
                out: list[BaseEvent] = [
                    ToolCallResultEvent(
                        message_id=_new_id("tool"), tool_call_id=call.id, content=result.text
                    )
                ]
                return out + self._state_changes()
            case _:
                return []

    def _delta(self, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._open is None:
            self._open = _new_id("msg")
            self._streamed = True
            out.append(TextMessageStartEvent(message_id=self._open, role="assistant"))
        out.append(TextMessageContentEvent(message_id=self._open, delta=text))
        return out

    def _message_done(self, text: str) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if self._open is None and not self._streamed and text:
            self._open = _new_id("msg")
            out.append(TextMessageStartEvent(message_id=self._open, role="assistant"))
            out.append(TextMessageContentEvent(message_id=self._open, delta=text))
        if self._open is not None:
            out.append(TextMessageEndEvent(message_id=self._open))
        self._last_message = self._open
        self._open = None
        self._streamed = False
        return out

    def _state_changes(self) -> list[BaseEvent]:
        now = _dump(self._state.get("state"))
        if now == self._shown:
            return []
        self._shown = now
        return [StateSnapshotEvent(snapshot=self._state.get("state"))]

    def finish(self, result: RunResult[Any]) -> list[BaseEvent]:
        out = self._state_changes()
        if self._open is not None:
            out.append(TextMessageEndEvent(message_id=self._open))
            self._open = None
        turn = result.turn
        if result.status == "completed":
            output = to_jsonable(result.raw_output) if result.has_output else None
            outcome = RunFinishedSuccessOutcome()
            out.append(self._finished(output, outcome))
        elif result.status == "suspended" and turn.suspension is not None:
            interrupts = [_interrupt(c) for c in turn.suspension.pending_tool_calls]
            out.append(self._finished(None, RunFinishedInterruptOutcome(interrupts=interrupts)))
        elif turn.outcome is not None and turn.outcome.reason == "canceled":
            out.append(self._finished(None, RunFinishedCancelledOutcome()))
        else:
            reason = turn.outcome.reason if turn.outcome is not None else result.status
            error = turn.outcome.error if turn.outcome is not None else None
            message = f"incomplete ({reason})" + (f": {error}" if error else "")
            out.append(RunErrorEvent(message=message, code=reason))
        return out

    def _finished(self, result: Any, outcome: Any) -> RunFinishedEvent:
        return RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=outcome
        )

    def error(self, exc: BaseException) -> list[BaseEvent]:
        """The run could not start (or broke): ``RUN_ERROR`` naming why."""
        return [RunErrorEvent(message=str(exc) or type(exc).__name__, code=type(exc).__name__)]


def _interrupt(call: PendingToolCall) -> Interrupt:
    schema = call.metadata.get("response_schema")
    if call.reason == "approval_required":
        schema = APPROVAL_SCHEMA
    prompt = call.prompt or f"{call.name} needs an answer"
    return Interrupt(
        id=call.id,
        reason=call.reason,
        message=prompt,
        tool_call_id=call.id,
        response_schema=schema if isinstance(schema, dict) else None,
        metadata={"tool_name": call.name, "input": dict(call.input)},
    )
