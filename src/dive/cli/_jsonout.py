"""Print mode's JSON: the result object, and events as JSON lines.

``--output-format json`` prints one object, :func:`result_object`; ``stream-json`` prints a
``start`` line, then every event of the run (:func:`event_object`: the event's record as
JSON, with its ``type``), then the same result object as the last line. The result object's
top-level ``status`` (``completed``, ``suspended`` or ``incomplete``) and ``output`` (the
final answer text, ``""`` when there is none) are a stable convention.
"""

from __future__ import annotations

import json
from typing import Any

from dive.agent import AgentEvent, RunResult
from dive.cli._providers import ModelChoice
from dive.messages.codec import to_jsonable

__all__ = ["dumps", "event_object", "result_object", "start_object"]


def dumps(value: object) -> str:
    """Compact JSON on one line."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def start_object(*, session_id: str, new: bool, choice: ModelChoice) -> dict[str, Any]:
    """The first line of ``stream-json``: the session and the model."""
    return {
        "type": "start",
        "session_id": session_id,
        "new_session": new,
        "model": choice.spec,
        "offline": choice.offline,
    }


def event_object(event: AgentEvent) -> dict[str, Any]:
    """One event as JSON (``type`` first)."""
    data: dict[str, Any] = to_jsonable(event)
    return {"type": event.type, **{k: v for k, v in data.items() if k != "type"}}


def _error(result: RunResult[Any]) -> str | None:
    if result.error is not None:
        return str(result.error)
    return result.outcome.error if result.outcome is not None else None


def result_object(
    result: RunResult[Any], *, session_id: str, choice: ModelChoice
) -> dict[str, Any]:
    """The result of a print-mode run (see the module docstring)."""
    outcome = result.outcome
    suspension = result.turn.suspension
    pending = suspension.pending_tool_calls if suspension is not None else ()
    return {
        "type": "result",
        "status": result.status,
        "output": result.output_text,
        "session_id": session_id,
        "turn_id": result.turn.id,
        "model": choice.spec,
        "offline": choice.offline,
        "stop_reason": result.stop_reason,
        "reason": outcome.reason if outcome is not None else None,
        "next": outcome.next if outcome is not None else None,
        "error": _error(result),
        "pending": [to_jsonable(p) for p in pending],
        "tool_calls": [
            {"id": c.id, "name": c.name, "state": c.state} for c in result.turn.tool_calls
        ],
        "model_calls": result.turn.model_calls,
        "usage": to_jsonable(result.usage),
        "cost_usd": result.usage.cost,
        "persistence": result.persistence,
    }
