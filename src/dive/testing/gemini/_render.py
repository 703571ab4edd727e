r"""Response rendering: response ids, thought signatures, the response JSON and its SSE chunks.

A response (``generateContent``) is::

    {"candidates": [{"content": {"parts": [...], "role": "model"},
                     "finishReason": "STOP", "index": 0}],
     "usageMetadata": {"promptTokenCount": …, "candidatesTokenCount": …,
                       "totalTokenCount": …, "promptTokensDetails": [...], …},
     "modelVersion": "gemini-…", "responseId": "…"}

A blocked prompt has no ``candidates`` but ``promptFeedback: {"blockReason": …}``. A candidate
without parts has ``content: {"role": "model"}`` (``MAX_TOKENS`` spent on thinking), or no
``content`` at all when it was stopped for safety-type reasons.

Usage follows the API (proto3 JSON, zero counts left out): ``promptTokenCount`` includes
``cachedContentTokenCount``; ``candidatesTokenCount`` counts the non-thought parts,
``thoughtsTokenCount`` the thought parts (not included in candidates);
``totalTokenCount = prompt + candidates + thoughts + toolUsePrompt``.

A stream (``streamGenerateContent?alt=sse``) is data-only SSE (``data: {json}\r\n\r\n``)
whose chunks have the response shape, each with ``modelVersion``, ``responseId`` and a running
``usageMetadata``: text and thought parts are split into pieces of :data:`TEXT_CHUNK`
characters, one per chunk (a part's signature rides on its last piece); consecutive function
calls arrive together in one chunk; the last chunk carries ``finishReason`` and the final
``usageMetadata``.

Signatures: when a reply is served, the first ``functionCall`` part (only the first of parallel
calls), or without calls the last part of a reply with thoughts, gets a fresh opaque base64
signature unless the scripted part says otherwise. The :class:`Issuer` remembers every
signature served, and which call it was served on, by its decoded bytes (the SDK decodes the
standard base64 the API sends and re-encodes it URL-safe).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from dive.testing.gemini._request import as_dict
from dive.testing.gemini._script import SimBlocked, SimReply
from dive.testing.gemini._tokens import canonical, part_tokens

__all__ = [
    "BYPASS_SIGNATURES",
    "TEXT_CHUNK",
    "CallKey",
    "Issuer",
    "call_key",
    "encode_chunk",
    "finalize_parts",
    "render_blocked",
    "render_response",
    "response_chunks",
    "signature_bytes",
]

TEXT_CHUNK = 16
BYPASS_SIGNATURES = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
"""Dummy signatures the API documents as skipping validation (raw or base64-encoded)."""

_SIGNATURE_PREFIX = b"\x0a\x2e"  # a length-delimited protobuf field, like real signatures
_ID_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_NO_CONTENT_REASONS = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)

CallKey = tuple[str, bytes, str]
"""A function call's identity: name, canonical args JSON, id ("" when absent)."""


def call_key(call: Mapping[str, Any]) -> CallKey:
    """The identity of a ``functionCall`` object."""
    return (str(call.get("name", "")), canonical(call.get("args") or {}), str(call.get("id") or ""))


def signature_bytes(value: str) -> bytes:
    """The bytes a ``thoughtSignature`` carries.

    Base64 in either alphabet (standard or URL-safe), padding optional; a value that is not
    base64 stands for its own UTF-8 bytes.

    Args:
        value: a ``thoughtSignature`` as sent.
    """
    normalized = value.strip().replace("-", "+").replace("_", "/")
    normalized += "=" * (-len(normalized) % 4)
    try:
        return base64.b64decode(normalized, validate=True)
    except (binascii.Error, ValueError):
        return value.encode()


def _base62(n: int, width: int) -> str:
    digits: list[str] = []
    while n:
        n, r = divmod(n, 62)
        digits.append(_ID_ALPHABET[r])
    return "".join(reversed(digits)).rjust(width, "0")


class Issuer:
    """Deterministic response ids, and the thought signatures the simulator served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._issued: set[bytes] = set()
        self._calls: dict[CallKey, set[bytes]] = {}

    def _next(self) -> int:
        with self._lock:
            return next(self._counter)

    def response_id(self) -> str:
        return "SimResp" + _base62(self._next(), 15)

    def new_signature(self) -> str:
        """A fresh opaque signature (standard base64; remembered when served)."""
        n = self._next()
        digest = hashlib.sha256(f"gemini-sim-signature\x00{n}".encode()).digest()
        tail = hashlib.sha256(digest).digest()[:14]
        return base64.b64encode(_SIGNATURE_PREFIX + digest + tail).decode()

    def remember(self, signature: str, call: CallKey | None = None) -> None:
        key = signature_bytes(signature)
        with self._lock:
            self._issued.add(key)
            if call is not None:
                self._calls.setdefault(call, set()).add(key)

    def issued(self, signature: str) -> bool:
        """Whether this simulator served the signature (compared by decoded bytes)."""
        with self._lock:
            return signature_bytes(signature) in self._issued

    def signed_call(self, call: CallKey) -> bool:
        """Whether this simulator served a signature on a call with this identity."""
        with self._lock:
            return call in self._calls


def _copy(value: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(value))
    return copied


def finalize_parts(reply: SimReply, issuer: Issuer) -> list[dict[str, Any]]:
    """Copies of the scripted parts with signatures filled in (and remembered)."""
    parts = [_copy(p) for p in reply.parts]
    if reply.signatures and parts:
        calls = [i for i, p in enumerate(parts) if "functionCall" in p]
        target: int | None = None
        if calls:
            target = calls[0]
        elif any(p.get("thought") for p in parts):
            target = len(parts) - 1
        if target is not None and "thoughtSignature" not in parts[target]:
            parts[target]["thoughtSignature"] = issuer.new_signature()
    for part in parts:
        signature = part.get("thoughtSignature")
        if signature is None:
            part.pop("thoughtSignature", None)
            continue
        call = as_dict(part.get("functionCall"))
        issuer.remember(str(signature), call_key(call) if call is not None else None)
    return parts


def _counts(parts: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    candidates = sum(part_tokens(p) for p in parts if not p.get("thought"))
    thoughts = sum(part_tokens(p) for p in parts if p.get("thought"))
    return candidates, thoughts


_COUNT_KEYS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "cachedContentTokenCount",
    "thoughtsTokenCount",
    "toolUsePromptTokenCount",
)
_PROMPT_SIDE_KEYS = ("promptTokenCount", "cachedContentTokenCount", "toolUsePromptTokenCount")


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_metadata(
    prompt: int,
    candidates: int,
    thoughts: int,
    override: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``usageMetadata`` in the API's key order, zero counts left out unless overridden."""
    explicit: dict[str, Any] = _copy(override) if override else {}
    counts: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "cachedContentTokenCount": 0,
        "thoughtsTokenCount": thoughts,
        "toolUsePromptTokenCount": 0,
    }
    counts.update({k: v for k, v in explicit.items() if k in _COUNT_KEYS})
    cached = _int(counts["cachedContentTokenCount"])
    if "promptTokenCount" not in explicit:
        counts["promptTokenCount"] = max(prompt, cached)
    total = sum(_int(counts[k]) for k in _COUNT_KEYS if k != "cachedContentTokenCount")
    usage: dict[str, Any] = {
        "promptTokenCount": counts["promptTokenCount"],
        "candidatesTokenCount": counts["candidatesTokenCount"],
        "totalTokenCount": total,
        "cachedContentTokenCount": counts["cachedContentTokenCount"],
        "promptTokensDetails": [
            {"modality": "TEXT", "tokenCount": _int(counts["promptTokenCount"])}
        ],
        "thoughtsTokenCount": counts["thoughtsTokenCount"],
        "toolUsePromptTokenCount": counts["toolUsePromptTokenCount"],
    }
    if cached:
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    usage.update(explicit)
    return {
        k: v
        for k, v in usage.items()
        if v is not None and (k in explicit or k not in _COUNT_KEYS[1:] or v != 0)
    }


def _candidate(reply: SimReply, parts: list[dict[str, Any]], *, final: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {}
    if parts:
        candidate["content"] = {"parts": parts, "role": "model"}
    elif reply.finish_reason not in _NO_CONTENT_REASONS:
        candidate["content"] = {"role": "model"}
    if final:
        candidate["finishReason"] = reply.finish_reason
        if reply.finish_message is not None:
            candidate["finishMessage"] = reply.finish_message
        if reply.candidate_fields:
            candidate.update(_copy(reply.candidate_fields))
    candidate["index"] = 0
    return candidate


def render_response(
    *,
    reply: SimReply,
    parts: list[dict[str, Any]],
    prompt_tokens: int,
    model_version: str,
    response_id: str,
) -> dict[str, Any]:
    """The complete ``generateContent`` response."""
    candidates, thoughts = _counts(parts)
    return {
        "candidates": [_candidate(reply, parts, final=True)],
        "usageMetadata": usage_metadata(prompt_tokens, candidates, thoughts, reply.usage),
        "modelVersion": reply.model_version or model_version,
        "responseId": response_id,
    }


def render_blocked(
    *, blocked: SimBlocked, prompt_tokens: int, model_version: str, response_id: str
) -> dict[str, Any]:
    """The response to a blocked prompt: no candidates, ``promptFeedback.blockReason``."""
    feedback: dict[str, Any] = {"blockReason": blocked.block_reason}
    if blocked.message is not None:
        feedback["blockReasonMessage"] = blocked.message
    if blocked.safety_ratings:
        feedback["safetyRatings"] = [_copy(r) for r in blocked.safety_ratings]
    return {
        "promptFeedback": feedback,
        "usageMetadata": usage_metadata(prompt_tokens, 0, 0, blocked.usage),
        "modelVersion": model_version,
        "responseId": response_id,
    }


def _pieces(text: str) -> list[str]:
    return [text[i : i + TEXT_CHUNK] for i in range(0, len(text), TEXT_CHUNK)] or [""]


def _split(parts: Sequence[dict[str, Any]]) -> list[list[tuple[int, dict[str, Any]]]]:
    """Each chunk's parts, as ``(index of the whole part, piece)``."""
    chunks: list[list[tuple[int, dict[str, Any]]]] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if "functionCall" in part:
            group: list[tuple[int, dict[str, Any]]] = []
            while i < len(parts) and "functionCall" in parts[i]:
                group.append((i, parts[i]))
                i += 1
            chunks.append(group)
            continue
        text = part.get("text")
        if isinstance(text, str):
            pieces = _pieces(text)
            rest = {k: v for k, v in part.items() if k not in ("text", "thoughtSignature")}
            for n, piece in enumerate(pieces):
                chunk_part = {"text": piece, **rest}
                if n == len(pieces) - 1 and "thoughtSignature" in part:
                    chunk_part["thoughtSignature"] = part["thoughtSignature"]
                chunks.append([(i, chunk_part)])
        else:
            chunks.append([(i, part)])
        i += 1
    return chunks


def response_chunks(
    *,
    reply: SimReply,
    parts: list[dict[str, Any]],
    prompt_tokens: int,
    model_version: str,
    response_id: str,
) -> list[dict[str, Any]]:
    """The streamed chunks of a response (see the module docstring)."""
    final = render_response(
        reply=reply,
        parts=parts,
        prompt_tokens=prompt_tokens,
        model_version=model_version,
        response_id=response_id,
    )
    split = _split(parts)
    if not split:
        return [final]
    prompt_side = {k: v for k, v in (reply.usage or {}).items() if k in _PROMPT_SIDE_KEYS}
    so_far: dict[int, dict[str, Any]] = {}
    chunks: list[dict[str, Any]] = []
    for n, pieces in enumerate(split):
        last = n == len(split) - 1
        for index, piece in pieces:
            seen = so_far.setdefault(index, {k: v for k, v in piece.items() if k != "text"})
            if isinstance(piece.get("text"), str):
                seen["text"] = str(seen.get("text", "")) + str(piece["text"])
        if last:
            usage = final["usageMetadata"]
        else:
            candidates, thoughts = _counts(list(so_far.values()))
            usage = usage_metadata(prompt_tokens, candidates, thoughts, prompt_side)
        chunks.append(
            {
                "candidates": [_candidate(reply, [p for _, p in pieces], final=last)],
                "usageMetadata": usage,
                "modelVersion": final["modelVersion"],
                "responseId": response_id,
            }
        )
    return chunks


def encode_chunk(chunk: Mapping[str, Any]) -> bytes:
    r"""One data-only SSE event, framed as the API frames it (``\r\n\r\n``)."""
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\r\n\r\n"
