"""Outcomes: scripted replies and faults → what the HTTP layer writes.

- :func:`json_outcome` / :func:`error_outcome` — complete JSON bodies (errors carry
  ``{"type": "error", "error": {…}, "request_id": …}``);
- :func:`fault_outcome` — a :class:`SimFault` with its retry headers;
- :func:`complete_outcome` — a non-streaming message, or its scripted fault (an error status
  for :class:`SimStreamError`, half a body for :class:`SimCut`, invalid JSON for
  :class:`SimMalformed`);
- :func:`stream_outcome` — the SSE events, truncated after N counted events (pings are not
  counted) and followed by ``event: error``, a dropped connection or malformed data.

Every outcome carries the ``request-id`` header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dive.testing.anthropic._errors import (
    APIErrorAnswer,
    default_message,
    error_body,
    error_type_for_status,
    status_for_error_type,
)
from dive.testing.anthropic._http import Outcome
from dive.testing.anthropic._render import Event, encode_event
from dive.testing.anthropic._script import SimCut, SimFault, SimMalformed, SimStreamError

__all__ = [
    "StreamFault",
    "complete_outcome",
    "error_outcome",
    "fault_outcome",
    "json_outcome",
    "stream_outcome",
]

StreamFault = SimStreamError | SimCut | SimMalformed


def _headers(request_id: str, content_type: str = "application/json") -> list[tuple[str, str]]:
    return [("request-id", request_id), ("content-type", content_type)]


def json_outcome(
    status: int,
    payload: object,
    request_id: str,
    extra: Sequence[tuple[str, str]] = (),
) -> Outcome:
    return Outcome(
        status=status,
        headers=[*_headers(request_id), *extra],
        body=json.dumps(payload, separators=(",", ":")).encode(),
    )


def error_outcome(answer: APIErrorAnswer, request_id: str) -> Outcome:
    body = error_body(answer.error_type, answer.message, request_id)
    return json_outcome(answer.status, body, request_id, list(answer.headers.items()))


def fault_outcome(fault: SimFault, request_id: str) -> Outcome:
    error_type = fault.error_type or error_type_for_status(fault.status)
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        value = fault.retry_after
        headers["retry-after"] = value if isinstance(value, str) else _number(value)
    if fault.retry_after_ms is not None:
        headers["retry-after-ms"] = _number(fault.retry_after_ms)
    if fault.should_retry is not None:
        headers["x-should-retry"] = "true" if fault.should_retry else "false"
    headers.update(fault.headers)
    answer = APIErrorAnswer(
        fault.status,
        fault.message or default_message(error_type),
        error_type=error_type,
        headers=headers,
    )
    return error_outcome(answer, request_id)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def complete_outcome(
    message: Mapping[str, Any], fault: StreamFault | None, request_id: str
) -> Outcome:
    body = json.dumps(message, separators=(",", ":")).encode()
    match fault:
        case None:
            return Outcome(status=200, headers=_headers(request_id), body=body)
        case SimStreamError():
            status = status_for_error_type(fault.error_type)
            answer = APIErrorAnswer(
                status,
                fault.message or default_message(fault.error_type),
                error_type=fault.error_type,
            )
            return error_outcome(answer, request_id)
        case SimCut():
            return Outcome(status=200, headers=_headers(request_id), body=body, cut=True)
        case SimMalformed():
            return Outcome(status=200, headers=_headers(request_id), body=body[: len(body) // 2])


def _take(events: Sequence[Event], count: int) -> tuple[list[Event], Event | None]:
    """The events up to the ``count``-th counted one, and the counted event after them."""
    taken: list[Event] = []
    seen = 0
    for event in events:
        if event.counted:
            if seen == count:
                return taken, event
            seen += 1
        elif seen == count:
            # Pings after the last taken event are left out too.
            continue
        taken.append(event)
    return taken, None


def stream_outcome(
    events: Sequence[Event], fault: StreamFault | None, request_id: str, event_delay: float
) -> Outcome:
    headers = [
        *_headers(request_id, "text/event-stream; charset=utf-8"),
        ("cache-control", "no-cache"),
    ]
    chunks: list[bytes]
    cut = False
    match fault:
        case None:
            chunks = [encode_event(e) for e in events]
        case SimStreamError():
            taken, _ = _take(events, fault.after_events)
            error = {
                "type": "error",
                "error": {
                    "type": fault.error_type,
                    "message": fault.message or default_message(fault.error_type),
                },
                "request_id": request_id,
            }
            chunks = [encode_event(e) for e in taken]
            chunks.append(encode_event(Event("error", error)))
        case SimCut():
            taken, _ = _take(events, fault.after_events)
            chunks = [encode_event(e) for e in taken]
            cut = True
        case SimMalformed():
            taken, following = _take(events, fault.after_events)
            chunks = [encode_event(e) for e in taken]
            broken = following or events[-1]
            data = json.dumps(broken.data, separators=(",", ":"))
            chunks.append(f"event: {broken.name}\ndata: {data[: len(data) // 2]}\n\n".encode())
    return Outcome(status=200, headers=headers, events=chunks, event_delay=event_delay, cut=cut)
