"""Outcomes: scripted replies and faults → what the HTTP layer writes.

- :func:`json_outcome` / :func:`error_outcome` — complete JSON bodies (errors in Google's
  envelope);
- :func:`fault_outcome` — a :class:`SimFault` with its ``retry-after`` header and
  ``RetryInfo`` detail;
- :func:`complete_outcome` — a non-streaming response (or a non-SSE stream, served as one JSON
  array), or its scripted fault: the error status for :class:`SimStreamError`, half a body
  for :class:`SimCut` (then the connection drops), half a body for :class:`SimMalformed`;
- :func:`stream_outcome` — the SSE chunks, truncated after N chunks and followed by an error
  chunk, a dropped connection or malformed data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dive.testing.anthropic._http import Outcome
from dive.testing.gemini._errors import APIErrorAnswer, default_message
from dive.testing.gemini._render import encode_chunk
from dive.testing.gemini._script import SimCut, SimFault, SimMalformed, SimStreamError

__all__ = [
    "StreamFault",
    "complete_outcome",
    "error_outcome",
    "fault_outcome",
    "json_outcome",
    "stream_outcome",
]

StreamFault = SimStreamError | SimCut | SimMalformed

_JSON = "application/json; charset=UTF-8"
_SSE = "text/event-stream"


def _dumps(payload: object) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def json_outcome(status: int, payload: object, extra: Sequence[tuple[str, str]] = ()) -> Outcome:
    return Outcome(
        status=status,
        headers=[("content-type", _JSON), *extra],
        body=_dumps(payload),
    )


def error_outcome(answer: APIErrorAnswer) -> Outcome:
    return json_outcome(answer.code, answer.body, list(answer.headers.items()))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def fault_outcome(fault: SimFault) -> Outcome:
    headers: dict[str, str] = {}
    details: list[Mapping[str, Any]] = []
    if fault.retry_after is not None:
        value = fault.retry_after
        if isinstance(value, str):
            headers["retry-after"] = value
        else:
            headers["retry-after"] = _number(value)
            details.append(
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{_number(value)}s",
                }
            )
    headers.update(fault.headers)
    details.extend(fault.details)
    answer = APIErrorAnswer(
        fault.status,
        fault.message or default_message(fault.status),
        status=fault.error_status,
        headers=headers,
        details=details,
    )
    return error_outcome(answer)


def _stream_error(fault: SimStreamError) -> APIErrorAnswer:
    return APIErrorAnswer(fault.status, fault.message or default_message(fault.status))


def complete_outcome(payload: object, fault: StreamFault | None) -> Outcome:
    body = _dumps(payload)
    headers = [("content-type", _JSON)]
    match fault:
        case None:
            return Outcome(status=200, headers=headers, body=body)
        case SimStreamError():
            return error_outcome(_stream_error(fault))
        case SimCut():
            return Outcome(status=200, headers=headers, body=body, cut=True)
        case SimMalformed():
            return Outcome(status=200, headers=headers, body=body[: len(body) // 2])


def stream_outcome(
    chunks: Sequence[Mapping[str, Any]], fault: StreamFault | None, chunk_delay: float
) -> Outcome:
    headers = [("content-type", _SSE), ("cache-control", "no-cache")]
    events: list[bytes]
    cut = False
    match fault:
        case None:
            events = [encode_chunk(c) for c in chunks]
        case SimStreamError():
            events = [encode_chunk(c) for c in chunks[: fault.after_chunks]]
            events.append(encode_chunk(_stream_error(fault).body))
        case SimCut():
            events = [encode_chunk(c) for c in chunks[: fault.after_chunks]]
            cut = True
        case SimMalformed():
            taken = list(chunks[: fault.after_chunks])
            broken = chunks[len(taken)] if len(taken) < len(chunks) else chunks[-1]
            events = [encode_chunk(c) for c in taken]
            data = _dumps(broken)
            events.append(b"data: " + data[: len(data) // 2] + b"\r\n\r\n")
    return Outcome(status=200, headers=headers, events=events, event_delay=chunk_delay, cut=cut)
