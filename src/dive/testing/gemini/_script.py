"""The reply script: what the simulated model answers, and the faults it injects.

Each ``generateContent`` / ``streamGenerateContent`` request that passes validation takes the
next item (one script serves both endpoints, in order):

- :class:`SimReply` — response parts as Gemini REST JSON (camelCase), a finish reason, an
  optional usage override. Thought signatures are filled in when the response is served (see
  :class:`SimReply`).
- a plain ``str`` — a text reply with ``finishReason: STOP``.
- :class:`SimBlocked` — a blocked prompt: no candidates, ``promptFeedback.blockReason``.
- :class:`SimFault` — an HTTP error status in Google's envelope. A fault at the head of the
  script is answered before validation, like an edge error, so even an invalid request gets it.
- :class:`SimStreamError` — a 200 stream that sends N chunks, then an ``{"error": {…}}`` chunk.
- :class:`SimCut` — the connection drops after N chunks.
- :class:`SimMalformed` — invalid JSON: the whole body, or the data of chunk N+1.
- a callable taking the request body (a dict) and returning any of the above.

Requests rejected with a 400 consume nothing.

Parts are plain dicts, so anything the API can return may be scripted; the builders cover the
usual ones. On a scripted part, ``thoughtSignature`` absent means "the simulator decides", a
string is served as is (and remembered), None means "never signed".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dive.testing._script_queue import ScriptQueue

__all__ = [
    "FINISH_REASONS",
    "Reply",
    "Script",
    "ScriptItem",
    "SimBlocked",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimStreamError",
    "blocked",
    "function_call",
    "function_call_part",
    "function_calls",
    "reply",
    "text",
    "text_part",
    "thought_part",
]

FINISH_REASONS = (
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
)
"""Finish reasons the SDK's ``FinishReason`` enum knows (any other string is served as is; the
SDK then warns that it is not a valid ``FinishReason``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SimReply:
    """A scripted model response (one candidate).

    Attributes:
        parts: the candidate's parts as Gemini REST JSON (``{"text": …}``,
            ``{"text": …, "thought": True}``, ``{"functionCall": {"name", "args", "id"?}}``,
            anything else). Calls keep the ``id`` they are scripted with; none is generated.
        finish_reason: ``STOP`` (also with function calls), ``MAX_TOKENS``, ``SAFETY``,
            ``RECITATION``, ``MALFORMED_FUNCTION_CALL``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``,
            ``SPII``, ``OTHER``, …
        finish_message: ``candidates[0].finishMessage`` (e.g. for a malformed call).
        usage: ``usageMetadata`` keys (camelCase) that replace the computed ones; a None value
            removes the key. ``promptTokenCount`` is raised to ``cachedContentTokenCount`` and
            ``totalTokenCount`` is recomputed unless they are given.
        model_version: ``modelVersion`` (default: the model of the request path).
        candidate_fields: more fields of the candidate, camelCase, served on the final
            candidate (the last chunk of a stream): ``groundingMetadata``,
            ``citationMetadata``, ``urlContextMetadata``, ``safetyRatings``…
        signatures: whether the simulator signs parts that do not say (when True: the first
            ``functionCall`` part; without calls, the last part when the reply has thoughts).
        delay: seconds to wait before the response starts.
        chunk_delay: seconds to wait before each streamed chunk.
    """

    parts: Sequence[Mapping[str, Any]] = ()
    finish_reason: str = "STOP"
    finish_message: str | None = None
    usage: Mapping[str, Any] | None = None
    model_version: str | None = None
    candidate_fields: Mapping[str, Any] | None = None
    signatures: bool = True
    delay: float = 0.0
    chunk_delay: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SimBlocked:
    """A blocked prompt: no ``candidates``, ``promptFeedback.blockReason`` set.

    Attributes:
        block_reason: ``SAFETY``, ``OTHER``, ``BLOCKLIST``, ``PROHIBITED_CONTENT``,
            ``IMAGE_SAFETY``, …
        message: ``promptFeedback.blockReasonMessage`` (absent when None).
        safety_ratings: ``promptFeedback.safetyRatings``.
        usage: ``usageMetadata`` overrides, as for :class:`SimReply`.
    """

    block_reason: str = "SAFETY"
    message: str | None = None
    safety_ratings: Sequence[Mapping[str, Any]] = ()
    usage: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimFault:
    """An HTTP error answer in Google's envelope.

    Attributes:
        status: the HTTP status (429, 500, 503, 504, 400, …); also ``error.code``.
        message: ``error.message`` (a plausible default when None).
        error_status: ``error.status`` (derived from the status when None: 429
            ``RESOURCE_EXHAUSTED``, 500 ``INTERNAL``, 503 ``UNAVAILABLE``, 504
            ``DEADLINE_EXCEEDED``, …).
        retry_after: the ``retry-after`` header (seconds, or an HTTP date string); a number also
            adds a ``google.rpc.RetryInfo`` detail with ``retryDelay``, as Google sends on 429.
        details: extra ``error.details`` entries.
        headers: extra response headers.
    """

    status: int = 503
    message: str | None = None
    error_status: str | None = None
    retry_after: float | str | None = None
    details: Sequence[Mapping[str, Any]] = ()
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True, slots=True, kw_only=True)
class SimStreamError:
    """A 200 stream that sends ``after_chunks`` chunks of ``reply``, then an error chunk.

    The error chunk is ``data: {"error": {"code", "message", "status"}}``, which the SDK raises
    as ``ClientError`` / ``ServerError`` while iterating. A non-streaming request gets the HTTP
    error status instead.

    Attributes:
        after_chunks: chunks of ``reply`` sent before the error chunk.
        status: the HTTP status the error stands for (503, 429, 500, ...).
        message: the error's message; None: a plausible default.
        reply: the reply whose first chunks are sent; None: a short text reply.
    """

    after_chunks: int = 1
    status: int = 503
    message: str | None = None
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimCut:
    """The connection drops after ``after_chunks`` chunks of ``reply`` (no final chunk).

    A non-streaming request gets its headers and half of its body, then the drop.

    Attributes:
        after_chunks: chunks of ``reply`` sent before the connection drops.
        reply: the reply whose first chunks are sent; None: a short text reply.
    """

    after_chunks: int = 1
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimMalformed:
    """Invalid JSON: half the body of a non-streaming response, or the data of chunk N+1.

    Attributes:
        after_chunks: chunks of ``reply`` sent before the invalid one (0: the first is invalid).
        reply: the reply whose first chunks are sent; None: a short text reply.
    """

    after_chunks: int = 0
    reply: SimReply | None = None


Reply = SimReply | SimBlocked | SimFault | SimStreamError | SimCut | SimMalformed | str
ScriptItem = Reply | Callable[[dict[str, Any]], Reply]


def _signed(part: dict[str, Any], signature: str | None, unsigned: bool) -> dict[str, Any]:
    if unsigned:
        part["thoughtSignature"] = None
    elif signature is not None:
        part["thoughtSignature"] = signature
    return part


def text_part(text: str, signature: str | None = None, *, unsigned: bool = False) -> dict[str, Any]:
    """A text part (``signature``: served as is; ``unsigned``: never signed).

    Args:
        text: the part's text.
        signature: a ``thoughtSignature`` to serve as is; None: the simulator decides.
        unsigned: never sign this part.
    """
    return _signed({"text": text}, signature, unsigned)


def thought_part(
    text: str, signature: str | None = None, *, unsigned: bool = False
) -> dict[str, Any]:
    """A thought (summary) part: ``{"text": …, "thought": true}``.

    Args:
        text: the thought summary's text.
        signature: a ``thoughtSignature`` to serve as is; None: the simulator decides.
        unsigned: never sign this part.
    """
    return _signed({"text": text, "thought": True}, signature, unsigned)


def function_call_part(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    id: str | None = None,
    signature: str | None = None,
    unsigned: bool = False,
) -> dict[str, Any]:
    """A ``functionCall`` part (with ``id`` only when one is given, as the API often omits it).

    Args:
        name: the function to call.
        args: its JSON arguments (default ``{}``).
        id: the call id; None: no id, as the API often sends.
        signature: a ``thoughtSignature`` to serve as is; None: the simulator decides.
        unsigned: never sign this part.
    """
    call: dict[str, Any] = {"name": name, "args": dict(args or {})}
    if id is not None:
        call["id"] = id
    return _signed({"functionCall": call}, signature, unsigned)


def reply(
    *parts: Mapping[str, Any],
    finish_reason: str = "STOP",
    finish_message: str | None = None,
    usage: Mapping[str, Any] | None = None,
    **options: Any,
) -> SimReply:
    """A reply of several parts (``options`` are other :class:`SimReply` fields).

    Args:
        parts: the candidate's parts (the ``*_part`` helpers make them).
        finish_reason: the candidate's ``finishReason`` (``STOP``, ``MAX_TOKENS``, ``SAFETY``, ...).
        finish_message: the candidate's ``finishMessage``, if any.
        usage: keys that replace the computed ``usageMetadata``.
        options: other :class:`SimReply` fields.
    """
    return SimReply(
        parts=[dict(p) for p in parts],
        finish_reason=finish_reason,
        finish_message=finish_message,
        usage=usage,
        **options,
    )


def _lead(thought: str | None, text: str | None) -> list[dict[str, Any]]:
    lead: list[dict[str, Any]] = []
    if thought is not None:
        lead.append(thought_part(thought))
    if text is not None:
        lead.append(text_part(text))
    return lead


def text(
    text: str, *, thought: str | None = None, finish_reason: str = "STOP", **options: Any
) -> SimReply:
    """A text reply, after a thought part when ``thought`` is given.

    Args:
        text: the reply's text.
        thought: a thought summary sent before it, if any.
        finish_reason: the ``finishReason`` (``STOP``).
        options: other :class:`SimReply` fields.
    """
    return reply(*_lead(thought, None), text_part(text), finish_reason=finish_reason, **options)


def function_call(
    name: str,
    args: Mapping[str, Any] | None = None,
    *,
    id: str | None = None,
    thought: str | None = None,
    text: str | None = None,
    **options: Any,
) -> SimReply:
    """A reply calling one function (``finishReason: STOP``, as the API reports calls).

    Args:
        name: the function to call.
        args: its JSON arguments (default ``{}``).
        id: the call id, if the reply should carry one.
        thought: a thought summary sent before the call, if any.
        text: text sent before the call, if any.
        options: other :class:`SimReply` fields.
    """
    call = function_call_part(name, args, id=id)
    return reply(*_lead(thought, text), call, **options)


def function_calls(
    *calls: Mapping[str, Any] | tuple[str, Mapping[str, Any]],
    thought: str | None = None,
    text: str | None = None,
    **options: Any,
) -> SimReply:
    """A reply of parallel calls: parts from :func:`function_call_part` or ``(name, args)``.

    Args:
        calls: the calls, as :func:`function_call_part` parts or ``(name, args)`` pairs.
        thought: a thought summary sent before the calls, if any.
        text: text sent before the calls, if any.
        options: other :class:`SimReply` fields.
    """
    parts = [function_call_part(c[0], c[1]) if isinstance(c, tuple) else dict(c) for c in calls]
    return reply(*_lead(thought, text), *parts, **options)


def blocked(
    block_reason: str = "SAFETY",
    message: str | None = None,
    *,
    usage: Mapping[str, Any] | None = None,
) -> SimBlocked:
    """A blocked prompt.

    Args:
        block_reason: the ``promptFeedback.blockReason`` (``SAFETY``, ``OTHER``, ...).
        message: the ``blockReasonMessage``, if any.
        usage: keys that replace the computed ``usageMetadata``.
    """
    return SimBlocked(block_reason=block_reason, message=message, usage=usage)


class Script(ScriptQueue[ScriptItem, SimFault]):
    """A thread-safe queue of script items."""

    def __init__(self) -> None:
        super().__init__(SimFault)
