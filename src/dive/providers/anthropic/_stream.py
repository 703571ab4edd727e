"""Stream handling: raw Messages API stream events → dive's Anthropic-shaped events.

``message_delta`` usage is cumulative: fields present overwrite the running totals started by
``message_start``; the mapped event carries the merged usage. Unknown event types are skipped.
"""

from __future__ import annotations

from typing import Any

from dive.llm import (
    CitationsDelta,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    InputJSONDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    Ping,
    SignatureDelta,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
)
from dive.providers.anthropic._response import map_block, map_usage, sub

__all__ = ["StreamMapper"]

Json = dict[str, Any]

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation",
    "server_tool_use",
    "output_tokens_details",
    "service_tier",
)


class StreamMapper:
    """Maps one response's raw events, keeping the running usage."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.usage: Json = {}

    def map(self, event: Json) -> StreamEvent | None:
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            block = map_block(event["content_block"], self.label)
            return ContentBlockStart(index=int(event["index"]), block=block)
        if kind == "content_block_stop":
            return ContentBlockStop(index=int(event["index"]))
        if kind == "message_start":
            message = sub(event, "message")
            self.usage = {k: v for k, v in sub(message, "usage").items() if v is not None}
            return MessageStart(
                id=message.get("id"), model=message.get("model"), usage=map_usage(self.usage)
            )
        if kind == "message_delta":
            usage = sub(event, "usage")
            for key in _USAGE_FIELDS:
                value = usage.get(key)
                if value is not None:
                    self.usage[key] = value
            delta = sub(event, "delta")
            return MessageDelta(
                stop_reason=delta.get("stop_reason"),
                stop_sequence=delta.get("stop_sequence"),
                stop_details=delta.get("stop_details"),
                usage=map_usage(self.usage),
            )
        if kind == "message_stop":
            return MessageStop()
        if kind == "ping":
            return Ping()
        return None

    def _delta(self, event: Json) -> StreamEvent | None:
        d = sub(event, "delta")
        index = int(event["index"])
        kind = d.get("type")
        if kind == "text_delta":
            return ContentBlockDelta(index=index, delta=TextDelta(text=d.get("text") or ""))
        if kind == "input_json_delta":
            partial = d.get("partial_json") or ""
            return ContentBlockDelta(index=index, delta=InputJSONDelta(partial_json=partial))
        if kind == "thinking_delta":
            thinking = d.get("thinking") or ""
            return ContentBlockDelta(index=index, delta=ThinkingDelta(thinking=thinking))
        if kind == "signature_delta":
            signature = d.get("signature") or ""
            return ContentBlockDelta(index=index, delta=SignatureDelta(signature=signature))
        if kind == "citations_delta":
            return ContentBlockDelta(index=index, delta=CitationsDelta(citation=d.get("citation")))
        return None
