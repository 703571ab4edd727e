"""Response rendering: ids and signatures, the message JSON (A5) and its SSE events (A6).

Streams follow the API's order: ``message_start`` (empty content, null stop reason, usage
with the cache fields and ``output_tokens: 1``), then per block ``content_block_start`` →
deltas → ``content_block_stop``, then ``message_delta`` (stop reason, cumulative usage) and
``message_stop``. Block streaming:

- text: start with ``""``, ``text_delta`` chunks (then one ``citations_delta`` per citation);
- ``tool_use`` / ``server_tool_use``: start with ``input: {}``, an empty ``input_json_delta``,
  then the input JSON in fragments whose concatenation parses to exactly the input;
- thinking: start with empty ``thinking`` and ``signature``, ``thinking_delta`` chunks, one
  ``signature_delta`` just before the stop;
- compaction: start with null ``content`` (and ``encrypted_content``, when the block has one),
  then one ``compaction_delta`` carrying both whole;
- anything else (redacted thinking, server tool results, unknown types) arrives complete in
  ``content_block_start`` and stops at once.

A ``ping`` follows ``message_start`` and the first ``content_block_start``.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dive.testing.anthropic._cache import CachePlan
from dive.testing.anthropic._request import as_dict, as_list
from dive.testing.anthropic._script import SimReply
from dive.testing.anthropic._tokens import block_tokens, output_tokens

__all__ = ["Event", "Issuer", "encode_event", "message_events", "render_message"]

TEXT_CHUNK = 16
JSON_CHUNK = 24
_SIGNATURE_PREFIX = b"\x12\xa4\x01"  # base64 "EqQB", like real signatures
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _base62(n: int, width: int) -> str:
    digits: list[str] = []
    while n:
        n, r = divmod(n, 62)
        digits.append(_BASE62[r])
    return "".join(reversed(digits)).rjust(width, "0")


class Issuer:
    """Deterministic ids, and the signatures the simulator issued with their thinking text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._thinking: dict[str, str] = {}

    def _next(self) -> int:
        with self._lock:
            return next(self._counter)

    def request_id(self) -> str:
        return "req_011CSim" + _base62(self._next(), 14)

    def message_id(self) -> str:
        return "msg_01Sim" + _base62(self._next(), 15)

    def tool_use_id(self, server: bool = False) -> str:
        return ("srvtoolu_01Sim" if server else "toolu_01Sim") + _base62(self._next(), 15)

    def sign(self, thinking: str) -> str:
        """A new signature for ``thinking`` (remembered)."""
        digest = hashlib.sha256(f"{self._next()}\x00{thinking}".encode()).digest()
        signature = base64.b64encode(_SIGNATURE_PREFIX + digest).decode()
        self.remember(signature, thinking)
        return signature

    def remember(self, signature: str, thinking: str) -> None:
        with self._lock:
            self._thinking[signature] = thinking

    def issued_thinking(self, signature: str) -> str | None:
        """The thinking text a signature was issued with, or None if never issued here."""
        with self._lock:
            return self._thinking.get(signature)


def finalize_content(content: Sequence[Mapping[str, Any]], issuer: Issuer) -> list[dict[str, Any]]:
    """Copies of the scripted blocks with ids and signatures filled in (signatures remembered)."""
    out: list[dict[str, Any]] = []
    for raw in content:
        block: dict[str, Any] = json.loads(json.dumps(raw))
        kind = block.get("type")
        if kind in ("tool_use", "server_tool_use"):
            if not block.get("id"):
                block["id"] = issuer.tool_use_id(server=kind == "server_tool_use")
            block.setdefault("input", {})
        elif kind == "thinking":
            thinking = str(block.get("thinking", ""))
            block["thinking"] = thinking
            signature = block.get("signature")
            if signature is None:
                block["signature"] = issuer.sign(thinking)
            else:
                issuer.remember(str(signature), thinking)
        out.append(block)
    return out


def _usage(
    plan: CachePlan,
    content: Sequence[Mapping[str, Any]],
    override: Mapping[str, Any] | None,
    *,
    generated: bool,
) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "input_tokens": plan.input_tokens,
        "cache_creation_input_tokens": plan.creation_tokens,
        "cache_read_input_tokens": plan.read_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": plan.creation_5m,
            "ephemeral_1h_input_tokens": plan.creation_1h,
        },
        "output_tokens": output_tokens(content) if generated else 0,
        "service_tier": "standard",
    }
    thinking = [b for b in content if b.get("type") in ("thinking", "redacted_thinking")]
    if thinking:
        usage["output_tokens_details"] = {"thinking_tokens": sum(map(block_tokens, thinking))}
    server_tools = [b.get("name") for b in content if b.get("type") == "server_tool_use"]
    if server_tools:
        usage["server_tool_use"] = {
            "web_search_requests": server_tools.count("web_search"),
            "web_fetch_requests": server_tools.count("web_fetch"),
        }
    if override:
        usage.update(json.loads(json.dumps(override)))
    return usage


def render_message(
    *,
    message_id: str,
    model: str,
    reply: SimReply,
    content: Sequence[Mapping[str, Any]],
    plan: CachePlan,
    generated: bool = True,
) -> dict[str, Any]:
    """The complete (non-streaming) message JSON (``generated=False`` for a cache pre-warm)."""
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [dict(b) for b in content],
        "stop_reason": reply.stop_reason,
        "stop_sequence": reply.stop_sequence,
        "usage": _usage(plan, content, reply.usage, generated=generated),
    }
    if reply.stop_details is not None:
        message["stop_details"] = dict(reply.stop_details)
    return message


@dataclass(frozen=True, slots=True)
class Event:
    """One SSE event; pings are not counted in ``after_events``."""

    name: str
    data: Mapping[str, Any]

    @property
    def counted(self) -> bool:
        return self.name != "ping"


PING = Event("ping", {"type": "ping"})


def encode_event(event: Event) -> bytes:
    """One SSE event: an ``event:`` line, a ``data:`` line and a blank line."""
    data = json.dumps(event.data, separators=(",", ":"))
    return f"event: {event.name}\ndata: {data}\n\n".encode()


def _chunks(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _delta(index: int, delta: Mapping[str, Any]) -> Event:
    return Event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


_COMPACTION_DELTA_FIELDS = ("content", "encrypted_content")


def _block_events(index: int, block: Mapping[str, Any]) -> Iterator[Event]:
    kind = block.get("type")
    start: dict[str, Any]
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        citations = as_list(block.get("citations")) or []
        start = {k: v for k, v in block.items() if k not in ("text", "citations")}
        start["text"] = ""
        if citations:
            start["citations"] = []
        deltas = [
            {"type": "text_delta", "text": c} for c in _chunks(str(block["text"]), TEXT_CHUNK)
        ]
        deltas += [{"type": "citations_delta", "citation": c} for c in citations]
    elif kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        start = {**block, "input": {}}
        encoded = json.dumps(block.get("input", {}))
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [
            {"type": "input_json_delta", "partial_json": c} for c in _chunks(encoded, JSON_CHUNK)
        ]
    elif kind == "thinking":
        start = {**block, "thinking": "", "signature": ""}
        thinking = str(block.get("thinking", ""))
        if thinking:
            deltas = [
                {"type": "thinking_delta", "thinking": c} for c in _chunks(thinking, TEXT_CHUNK)
            ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "compaction":
        carried = [k for k in _COMPACTION_DELTA_FIELDS if block.get(k) is not None]
        start = {**block, **dict.fromkeys(carried)}
        start.setdefault("content", None)
        deltas = [{"type": "compaction_delta", **{k: block[k] for k in carried}}]
    else:
        start = dict(block)
    yield Event(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield _delta(index, delta)
    yield Event("content_block_stop", {"type": "content_block_stop", "index": index})


def message_events(message: Mapping[str, Any], *, pings: bool = True) -> list[Event]:
    """The SSE events that stream ``message`` (as :func:`render_message` built it)."""
    usage = as_dict(message["usage"]) or {}
    start_usage = {
        k: v for k, v in usage.items() if k not in ("output_tokens_details", "iterations")
    }
    start_usage["output_tokens"] = 1
    start_message: dict[str, Any] = {
        **{k: v for k, v in message.items() if k != "stop_details"},
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events = [Event("message_start", {"type": "message_start", "message": start_message})]
    if pings:
        events.append(PING)
    for index, block in enumerate(as_list(message["content"]) or []):
        block_events = list(_block_events(index, as_dict(block) or {}))
        if pings and index == 0:
            block_events.insert(1, PING)
        events.extend(block_events)
    delta: dict[str, Any] = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": message["stop_sequence"],
    }
    if "stop_details" in message:
        delta["stop_details"] = message["stop_details"]
    delta_usage = {
        k: v
        for k, v in usage.items()
        if k
        in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
            "server_tool_use",
            "output_tokens_details",
            "iterations",
        )
    }
    events.append(
        Event("message_delta", {"type": "message_delta", "delta": delta, "usage": delta_usage})
    )
    events.append(Event("message_stop", {"type": "message_stop"}))
    return events
