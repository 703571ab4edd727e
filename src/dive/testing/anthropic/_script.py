"""The reply script: what the simulated model answers, and the faults it injects.

Each ``POST /v1/messages`` that passes validation takes the next item:

- :class:`SimReply` — content blocks as Anthropic JSON, a stop reason, optional stop
  sequence / stop details / usage override. ``tool_use`` blocks without an ``id`` get one,
  thinking blocks without a ``signature`` get one the simulator remembers.
- a plain ``str`` — a text reply ending the turn.
- :class:`SimFault` — an HTTP error status. A fault at the head of the script is answered
  before validation, like an edge error, so even an invalid request gets it.
- :class:`SimStreamError` — a 200 stream that sends N events, then ``event: error``.
- :class:`SimCut` — the connection drops after N events.
- :class:`SimMalformed` — invalid JSON: the whole body, or the data of event N+1.
- a callable taking the request body (a dict) and returning any of the above.

Ping events are not counted in ``after_events``. Requests rejected with a 400 consume nothing;
neither does a cache pre-warm (``max_tokens: 0``), unless a fault is at the head.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dive.testing._script_queue import ScriptQueue

__all__ = [
    "Reply",
    "Script",
    "ScriptItem",
    "SimCut",
    "SimFault",
    "SimMalformed",
    "SimReply",
    "SimStreamError",
    "redacted_thinking_block",
    "reply",
    "server_tool_use_block",
    "text",
    "text_block",
    "thinking_block",
    "tool_use",
    "tool_use_block",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimReply:
    """A scripted model response.

    Attributes:
        content: the response blocks as Anthropic JSON dicts. ``tool_use`` and
            ``server_tool_use`` blocks without ``id`` get a generated one; ``thinking`` blocks
            without ``signature`` (or with None) get a generated signature.
        stop_reason: ``end_turn``, ``tool_use``, ``max_tokens``, ``stop_sequence``,
            ``pause_turn``, ``refusal``, ``model_context_window_exceeded`` or anything else.
        stop_sequence: reported with ``stop_reason="stop_sequence"``.
        stop_details: e.g. ``{"type": "refusal", "category": "cyber", "explanation": None}``.
        usage: keys that replace the computed usage (shallow merge), e.g.
            ``{"output_tokens": 50}``.
        delay: seconds to wait before the response starts (the cache publishes after it).
        event_delay: seconds to wait before each streamed event.
        pings: whether the stream carries ``ping`` events.
    """

    content: Sequence[Mapping[str, Any]] = ()
    stop_reason: str = "end_turn"
    stop_sequence: str | None = None
    stop_details: Mapping[str, Any] | None = None
    usage: Mapping[str, Any] | None = None
    delay: float = 0.0
    event_delay: float = 0.0
    pings: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class SimFault:
    """An HTTP error answer.

    Attributes:
        status: the HTTP status (429, 500, 503, 504, 529, …).
        error_type: ``error.type``; derived from the status when None (A7).
        message: ``error.message``; a plausible default when None (``Overloaded`` for 529).
        retry_after: the ``retry-after`` header (seconds, or an HTTP date string).
        retry_after_ms: the ``retry-after-ms`` header.
        should_retry: the ``x-should-retry`` header (absent when None).
        headers: extra response headers.
    """

    status: int = 529
    error_type: str | None = None
    message: str | None = None
    retry_after: float | str | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])


@dataclass(frozen=True, slots=True, kw_only=True)
class SimStreamError:
    """A 200 stream that sends ``after_events`` events of ``reply``, then ``event: error``.

    A non-streaming request gets the matching HTTP error status instead (529 for
    ``overloaded_error``).

    Attributes:
        after_events: events of ``reply`` sent before the error (pings not counted).
        error_type: the error event's ``error.type`` (``overloaded_error``, ``api_error``, ...).
        message: its ``error.message``; None: a plausible default.
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 1
    error_type: str = "overloaded_error"
    message: str | None = None
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimCut:
    """The connection drops after ``after_events`` events of ``reply`` (no ``message_stop``).

    A non-streaming request gets its headers and half of its body, then the drop.

    Attributes:
        after_events: events of ``reply`` sent before the connection drops.
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 1
    reply: SimReply | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimMalformed:
    """Invalid JSON: the body of a non-streaming response, or the data of event N+1 of a stream.

    Attributes:
        after_events: events of ``reply`` sent before the invalid one (0: the first is invalid).
        reply: the reply whose first events are sent; None: a short text reply.
    """

    after_events: int = 0
    reply: SimReply | None = None


Reply = SimReply | SimFault | SimStreamError | SimCut | SimMalformed | str
ScriptItem = Reply | Callable[[dict[str, Any]], Reply]


def text_block(text: str, **extra: Any) -> dict[str, Any]:
    """A text block.

    Args:
        text: the block's text.
        extra: other keys of the block (``citations``, ``cache_control``, ...).
    """
    return {"type": "text", "text": text, **extra}


def tool_use_block(
    name: str, input: Mapping[str, Any] | None = None, *, id: str | None = None
) -> dict[str, Any]:
    """A ``tool_use`` block (``id`` generated when the response is served if None).

    Args:
        name: the tool to call.
        input: its JSON input (default ``{}``).
        id: the call id; None: one is generated when the reply is served.
    """
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": dict(input or {})}
    if id is not None:
        block["id"] = id
    return block


def server_tool_use_block(
    name: str, input: Mapping[str, Any] | None = None, *, id: str | None = None
) -> dict[str, Any]:
    """A ``server_tool_use`` block (e.g. ``web_search``).

    Args:
        name: the server tool (``web_search``, ``code_execution``, ...).
        input: its JSON input (default ``{}``).
        id: the call id; None: one is generated when the reply is served.
    """
    block = tool_use_block(name, input, id=id)
    block["type"] = "server_tool_use"
    return block


def thinking_block(thinking: str, *, signature: str | None = None) -> dict[str, Any]:
    """A thinking block; the simulator signs it when ``signature`` is None.

    Args:
        thinking: the reasoning text.
        signature: its signature; None: the simulator signs it and remembers the text.
    """
    block: dict[str, Any] = {"type": "thinking", "thinking": thinking}
    if signature is not None:
        block["signature"] = signature
    return block


def redacted_thinking_block(data: str) -> dict[str, Any]:
    """A redacted thinking block.

    Args:
        data: the opaque encrypted reasoning.
    """
    return {"type": "redacted_thinking", "data": data}


def reply(
    *,
    blocks: Iterable[Mapping[str, Any]],
    stop_reason: str | None = None,
    stop_sequence: str | None = None,
    stop_details: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
) -> SimReply:
    """A reply of several blocks (stop reason ``tool_use`` by default when any is a tool use).

    Args:
        blocks: the content blocks, as Anthropic JSON (the ``*_block`` helpers make them).
        stop_reason: the stop reason; None: ``tool_use`` when a block is a tool use, else
            ``end_turn``.
        stop_sequence: the stop sequence, with ``stop_reason="stop_sequence"``.
        stop_details: the stop details (a refusal's category, say).
        usage: keys that replace the computed usage.
    """
    content = [dict(b) for b in blocks]
    if stop_reason is None:
        stop_reason = (
            "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"
        )
    return SimReply(
        content=content,
        stop_reason=stop_reason,
        stop_sequence=stop_sequence,
        stop_details=stop_details,
        usage=usage,
    )


def text(text: str, *, stop_reason: str = "end_turn", **options: Any) -> SimReply:
    """A reply holding one text block (``options`` are other :class:`SimReply` fields).

    Args:
        text: the reply's text.
        stop_reason: the stop reason (``end_turn``).
        options: other :class:`SimReply` fields (``usage``, ``delay``, ...).
    """
    return SimReply(content=[text_block(text)], stop_reason=stop_reason, **options)


def tool_use(name: str, input: Mapping[str, Any] | None = None, id: str | None = None) -> SimReply:
    """A reply calling one tool (``stop_reason="tool_use"``).

    Args:
        name: the tool to call.
        input: its JSON input (default ``{}``).
        id: the call id; None: one is generated.
    """
    return SimReply(content=[tool_use_block(name, input, id=id)], stop_reason="tool_use")


class Script(ScriptQueue[ScriptItem, SimFault]):
    """A thread-safe queue of script items."""

    def __init__(self) -> None:
        super().__init__(SimFault)
