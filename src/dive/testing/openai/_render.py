"""Shared rendering pieces: ids, encrypted reasoning, usage, SSE frames.

- :class:`Issuer` hands out deterministic ids (``req_…``, ``chatcmpl-…``, ``call_…``,
  ``resp_…``, ``msg_…``, ``fc_…``, ``rs_…``) and the reasoning ``encrypted_content`` values,
  remembering which item each was issued for.
- :class:`Usage` is one reply's token accounting; :meth:`Usage.chat` and
  :meth:`Usage.responses` render it per endpoint. Totals include cached and reasoning tokens.
- :class:`Frame` is one SSE event: ``data: …`` only (Chat) or ``event: …`` + ``data: …``
  (Responses); ``data: [DONE]`` is a frame without data.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dive.testing.openai._cache import CachePlan
from dive.testing.openai._script import SimReply
from dive.testing.openai._tokens import text_tokens

__all__ = ["CHUNK", "Frame", "Issuer", "Usage", "chunks", "encode_frame", "usage_for"]

CHUNK = 16
"""Characters per streamed text or arguments delta."""

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _base62(n: int, width: int) -> str:
    digits: list[str] = []
    while n:
        n, r = divmod(n, 62)
        digits.append(_BASE62[r])
    return "".join(reversed(digits)).rjust(width, "0")


def chunks(value: str, size: int = CHUNK) -> list[str]:
    """``value`` in pieces of ``size`` characters (at least one piece)."""
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


class Issuer:
    """Deterministic ids, and the encrypted reasoning contents the simulator issued."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._encrypted: dict[str, str] = {}

    def _next(self) -> int:
        with self._lock:
            return next(self._counter)

    def _hex(self, prefix: str, width: int) -> str:
        return prefix + f"{self._next():x}".rjust(width, "0")

    def request_id(self) -> str:
        return self._hex("req_sim", 25)

    def completion_id(self) -> str:
        return "chatcmpl-Sim" + _base62(self._next(), 17)

    def call_id(self) -> str:
        return "call_Sim" + _base62(self._next(), 16)

    def response_id(self) -> str:
        return self._hex("resp_5ea", 45)

    def message_id(self) -> str:
        return self._hex("msg_5ea", 45)

    def function_call_id(self) -> str:
        return self._hex("fc_5ea", 45)

    def reasoning_id(self) -> str:
        return self._hex("rs_5ea", 45)

    def obfuscation(self) -> str:
        return _base62(self._next(), 8)

    def encrypt(self, item_id: str, summary: str) -> str:
        """A new opaque ``encrypted_content`` for a reasoning item (remembered)."""
        digest = hashlib.sha256(f"{self._next()}\x00{item_id}\x00{summary}".encode()).digest()
        value = "gAAAAABo" + base64.urlsafe_b64encode(digest * 3).decode()
        self.remember(value, item_id)
        return value

    def remember(self, encrypted_content: str, item_id: str) -> None:
        with self._lock:
            self._encrypted[encrypted_content] = item_id

    def issued_item(self, encrypted_content: str) -> str | None:
        """The reasoning item id an ``encrypted_content`` was issued for (None if never)."""
        with self._lock:
            return self._encrypted.get(encrypted_content)


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """One reply's tokens: ``input`` includes ``cached``; ``output`` includes ``reasoning``."""

    input: int
    cached: int
    cache_write: int
    output: int
    reasoning: int
    extra: Mapping[str, Any] | None = None

    @property
    def total(self) -> int:
        return self.input + self.output

    def chat(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.input,
            "completion_tokens": self.output,
            "total_tokens": self.total,
            "prompt_tokens_details": {
                "cached_tokens": self.cached,
                "cache_write_tokens": self.cache_write,
                "audio_tokens": 0,
            },
            "completion_tokens_details": {
                "reasoning_tokens": self.reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
        if self.extra:
            usage.update(json.loads(json.dumps(self.extra)))
        return usage

    def responses(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "input_tokens": self.input,
            "input_tokens_details": {
                "cached_tokens": self.cached,
                "cache_write_tokens": self.cache_write,
            },
            "output_tokens": self.output,
            "output_tokens_details": {"reasoning_tokens": self.reasoning},
            "total_tokens": self.total,
        }
        if self.extra:
            usage.update(json.loads(json.dumps(self.extra)))
        return usage


def usage_for(reply: SimReply, plan: CachePlan) -> Usage:
    """The usage of ``reply`` for a prompt with cache ``plan``, with the reply's overrides."""
    visible = text_tokens(reply.text or "") + text_tokens(reply.refusal or "")
    for tool_call in reply.tool_calls:
        visible += text_tokens(tool_call.name) + text_tokens(tool_call.arguments_json())
    reasoning = sum(
        max(1, sum(text_tokens(t) for t in (*item.summary, *item.content)))
        for item in reply.reasoning
    )
    if reply.reasoning_tokens is not None:
        reasoning = reply.reasoning_tokens
    cached = plan.cached_tokens if reply.cached_tokens is None else reply.cached_tokens
    if reply.input_tokens is not None:
        prompt = reply.input_tokens
    else:
        prompt = max(plan.total_tokens, cached)
    output = reply.output_tokens
    if output is None:
        output = max(1, visible + reasoning)
    cache_write = 0 if reply.cached_tokens is not None else plan.write_tokens
    return Usage(
        input=prompt,
        cached=cached,
        cache_write=cache_write,
        output=output,
        reasoning=reasoning,
        extra=reply.usage,
    )


@dataclass(frozen=True, slots=True)
class Frame:
    """One SSE event.

    Attributes:
        data: the JSON payload (None for ``[DONE]``).
        event: the ``event:`` line (Responses), or None (Chat).
        final: part of the stream's end (Chat's finish-reason chunk, usage chunk and
            ``[DONE]``; Responses' terminal event), left out by a truncated stream.
    """

    data: Mapping[str, Any] | None
    event: str | None = None
    final: bool = False


def encode_frame(frame: Frame, *, broken: bool = False) -> bytes:
    """The frame's bytes (``broken``: its JSON cut in half)."""
    if frame.data is None:
        return b"data: [DONE]\n\n"
    data = json.dumps(frame.data, separators=(",", ":"), ensure_ascii=False)
    if broken:
        data = data[: len(data) // 2]
    head = f"event: {frame.event}\n" if frame.event is not None else ""
    return f"{head}data: {data}\n\n".encode()
