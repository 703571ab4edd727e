"""Stream handling: raw Messages API stream events → dive's Anthropic-shaped events.

``message_delta`` usage is cumulative: fields present overwrite the running totals started by
``message_start``; the mapped event carries the merged usage. Unknown event types are skipped.

A block dive does not model (``compaction``, or any future type) is held back while it
streams: its deltas (``compaction_delta`` or unknown ones) are folded into its raw JSON with
``fold_raw_delta``, and at its ``content_block_stop`` it is reported whole — a start carrying
the complete block, then the stop — so it is stored exactly as a non-streamed response gives
it. An unknown delta for a block dive does model is logged, never dropped silently.
"""

from __future__ import annotations

import json
import logging
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
    fold_raw_delta,
)
from dive.messages import UnknownBlock
from dive.providers.anthropic._response import map_block, map_usage, sub

__all__ = ["StreamMapper"]

Json = dict[str, Any]

log = logging.getLogger("dive.providers.anthropic")

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_creation",
    "server_tool_use",
    "output_tokens_details",
    "service_tier",
    "iterations",
)


def _with_input(block: Json, partial: str) -> Json:
    """A held block with the input its ``input_json_delta`` events streamed, parsed."""
    if not partial.strip():
        return block
    try:
        return {**block, "input": json.loads(partial)}
    except ValueError:
        log.warning("Anthropic stream: the input of a %r block is not JSON", block.get("type"))
        return block


class StreamMapper:
    """Maps one response's raw events, keeping the running usage and the held blocks."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.usage: Json = {}
        self._held: dict[int, Json] = {}  # raw JSON of unmodelled blocks, by index
        self._inputs: dict[int, str] = {}  # their input_json_delta text (mcp_tool_use), by index

    def map_all(self, event: Json) -> list[StreamEvent]:
        """The dive events for one raw event (none, one, or a held block's start and stop)."""
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            index = int(event["index"])
            raw = sub(event, "content_block")
            block = map_block(raw, self.label)
            if isinstance(block, UnknownBlock):
                self._held[index] = dict(raw)
                return []
            return [ContentBlockStart(index=index, block=block)]
        if kind == "content_block_stop":
            index = int(event["index"])
            held = self._held.pop(index, None)
            stop = ContentBlockStop(index=index)
            if held is None:
                return [stop]
            held = _with_input(held, self._inputs.pop(index, ""))
            return [ContentBlockStart(index=index, block=map_block(held, self.label)), stop]
        event_out = self._message_event(event)
        return [] if event_out is None else [event_out]

    def _message_event(self, event: Json) -> StreamEvent | None:
        kind = event.get("type")
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

    def _delta(self, event: Json) -> list[StreamEvent]:
        d = sub(event, "delta")
        index = int(event["index"])
        held = self._held.get(index)
        if held is not None:
            if d.get("type") == "input_json_delta":  # an unmodelled tool use's input
                self._inputs[index] = self._inputs.get(index, "") + str(d.get("partial_json") or "")
            else:
                self._held[index] = fold_raw_delta(held, d)
            return []
        mapped = self._known_delta(index, d)
        if mapped is None:
            log.warning(
                "Anthropic stream: a %r delta for content block %d (a block type dive models) "
                "has no mapping and was not applied; upgrade dive, or report it with the raw "
                "event: %r",
                d.get("type"),
                index,
                event,
            )
            return []
        return [mapped]

    def _known_delta(self, index: int, d: Json) -> StreamEvent | None:
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
