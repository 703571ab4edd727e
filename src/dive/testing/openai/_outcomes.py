"""Outcomes: scripted replies and faults → what the HTTP layer writes.

- :func:`json_outcome` / :func:`error_outcome` — complete JSON bodies (errors in the
  ``{"error": {message, type, param, code}}`` envelope);
- :func:`fault_outcome` — a :class:`SimFault` with its retry headers;
- :func:`complete_outcome` — a non-streaming body, or its scripted fault (an error status for
  :class:`SimStreamError`, half a body for :class:`SimCut` and :class:`SimTruncated`, invalid
  JSON for :class:`SimMalformed`);
- :func:`stream_outcome` — SSE frames, cut after N frames and followed by an error payload, a
  dropped connection, malformed data or a clean early end.

Every outcome carries ``x-request-id``, ``openai-version`` and ``openai-processing-ms``;
successful ones also carry ``x-ratelimit-*`` headers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from dive.testing.anthropic._http import Outcome
from dive.testing.openai._errors import (
    APIErrorAnswer,
    default_code,
    default_message,
    default_type,
    status_for_code,
)
from dive.testing.openai._render import Frame, encode_frame
from dive.testing.openai._script import (
    SimCut,
    SimFault,
    SimMalformed,
    SimStreamError,
    SimTruncated,
)

__all__ = [
    "StreamFault",
    "complete_outcome",
    "error_outcome",
    "fault_outcome",
    "json_outcome",
    "stream_error_answer",
    "stream_outcome",
]

StreamFault = SimStreamError | SimCut | SimMalformed | SimTruncated
Api = Literal["chat", "responses"]

_RATE_LIMIT_HEADERS = (
    ("x-ratelimit-limit-requests", "10000"),
    ("x-ratelimit-remaining-requests", "9999"),
    ("x-ratelimit-reset-requests", "6ms"),
    ("x-ratelimit-limit-tokens", "30000000"),
    ("x-ratelimit-remaining-tokens", "29999000"),
    ("x-ratelimit-reset-tokens", "2ms"),
)


def _headers(
    request_id: str, content_type: str = "application/json", *, ok: bool = False
) -> list[tuple[str, str]]:
    headers = [
        ("x-request-id", request_id),
        ("content-type", content_type),
        ("openai-version", "2020-10-01"),
        ("openai-processing-ms", "1"),
    ]
    if ok:
        headers.extend(_RATE_LIMIT_HEADERS)
    return headers


def _dumps(payload: object) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def json_outcome(status: int, payload: object, request_id: str) -> Outcome:
    return Outcome(status=status, headers=_headers(request_id, ok=True), body=_dumps(payload))


def error_outcome(answer: APIErrorAnswer, request_id: str) -> Outcome:
    return Outcome(
        status=answer.status,
        headers=[*_headers(request_id), *answer.headers.items()],
        body=_dumps(answer.body()),
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def fault_outcome(fault: SimFault, request_id: str) -> Outcome:
    code = fault.code if fault.code is not None else default_code(fault.status)
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
        fault.message or default_message(fault.status, code),
        type=fault.type or default_type(fault.status, code),
        param=fault.param,
        code=code,
        headers=headers,
    )
    return error_outcome(answer, request_id)


def stream_error_answer(fault: SimStreamError) -> APIErrorAnswer:
    """The HTTP error a non-streaming request gets for a :class:`SimStreamError`."""
    status = status_for_code(fault.code)
    return APIErrorAnswer(
        status,
        fault.message or default_message(status, fault.code),
        type=fault.type,
        code=fault.code,
    )


def complete_outcome(
    payload: Mapping[str, Any], fault: StreamFault | None, request_id: str
) -> Outcome:
    body = _dumps(payload)
    headers = _headers(request_id, ok=True)
    match fault:
        case None:
            return Outcome(status=200, headers=headers, body=body)
        case SimStreamError():
            return error_outcome(stream_error_answer(fault), request_id)
        case SimCut() | SimTruncated():
            return Outcome(status=200, headers=headers, body=body, cut=True)
        case SimMalformed():
            return Outcome(status=200, headers=headers, body=body[: len(body) // 2])


def _error_frame(fault: SimStreamError, api: Api, sequence_number: int) -> Frame:
    status = status_for_code(fault.code)
    error = {
        "message": fault.message or default_message(status, fault.code),
        "type": fault.type,
        "param": None,
        "code": fault.code,
    }
    if api == "chat":
        return Frame({"error": error})
    # Flat fields as documented; the nested object as the live API sends it (the SDK raises).
    data = {
        "type": "error",
        "code": fault.code,
        "message": error["message"],
        "param": None,
        "sequence_number": sequence_number,
        "error": error,
    }
    return Frame(data, event="error")


def stream_outcome(
    frames: Sequence[Frame],
    fault: StreamFault | None,
    request_id: str,
    event_delay: float,
    api: Api,
) -> Outcome:
    headers = [
        *_headers(request_id, "text/event-stream; charset=utf-8", ok=True),
        ("cache-control", "no-cache"),
    ]
    payloads = [f for f in frames if f.data is not None]  # [DONE] is never counted
    chunks: list[bytes]
    cut = False
    match fault:
        case None:
            chunks = [encode_frame(f) for f in frames]
        case SimStreamError():
            taken = payloads[: fault.after_events]
            chunks = [encode_frame(f) for f in taken]
            chunks.append(encode_frame(_error_frame(fault, api, len(taken))))
        case SimCut():
            chunks = [encode_frame(f) for f in payloads[: fault.after_events]]
            cut = True
        case SimMalformed():
            taken = payloads[: fault.after_events]
            chunks = [encode_frame(f) for f in taken]
            broken = payloads[len(taken)] if len(taken) < len(payloads) else payloads[-1]
            chunks.append(encode_frame(broken, broken=True))
        case SimTruncated():
            early = [f for f in frames if not f.final]
            if fault.after_events is not None:
                early = early[: fault.after_events]
            chunks = [encode_frame(f) for f in early]
    return Outcome(status=200, headers=headers, events=chunks, event_delay=event_delay, cut=cut)
