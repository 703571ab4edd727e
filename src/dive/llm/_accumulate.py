"""Build a ``ModelResponse`` from stream events, and events from a response.

The accumulator tracks what reached the consumer: ``content_started`` turns true at the first
``content_block_start`` (the end of the retry window), ``complete`` at ``message_stop``.
``partial()`` returns what an interrupted stream leaves that is safe to keep: finished blocks
and partial text, minus half-written tool JSON, thinking without its signature, and server
tool calls without their result.

``fold_raw_delta`` is the generic accumulation of a block dive does not model: a provider that
meets such a block holds its raw JSON, folds each of its deltas in, and reports the block
complete at its stop, so no delta is ever dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from dive.errors import StreamInterruptedError
from dive.llm._events import (
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
from dive.llm._response import ModelResponse
from dive.llm._usage import Usage
from dive.messages import (
    ContentBlock,
    ProviderState,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
)
from dive.messages.codec import JSONValue

__all__ = ["ResponseAccumulator", "fold_raw_delta", "parse_tool_arguments", "response_to_events"]


def parse_tool_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Parse streamed tool JSON: ``(arguments, None)`` or ``({}, raw)`` if not an object.

    Args:
        raw: the tool call's accumulated JSON text.
    """
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError:
        return {}, raw
    if not isinstance(value, dict):
        return {}, raw
    return value, None  # pyright: ignore[reportUnknownVariableType]


def fold_raw_delta(block: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """A raw block's JSON with one raw delta folded in (a new dict; the inputs are unchanged).

    Every field of the delta but ``type`` applies to the field of the same name: a string
    appends to a string, a list extends a list, anything else replaces the value, and a null
    changes nothing. A compaction block started with ``content: null`` and given
    ``{"type": "compaction_delta", "content": "Summary…"}`` ends with that content.

    Args:
        block: the block's JSON so far (as ``content_block_start`` gave it, plus earlier deltas).
        delta: one delta's JSON, e.g. ``{"type": "compaction_delta", "content": "…"}``.

    Returns:
        The block's JSON with the delta applied.
    """
    out = dict(block)
    for key, value in delta.items():
        if key == "type" or value is None:
            continue
        current = out.get(key)
        if isinstance(value, str) and isinstance(current, str):
            out[key] = current + value
        elif isinstance(value, list) and isinstance(current, list):
            out[key] = [*current, *value]  # pyright: ignore[reportUnknownVariableType]
        else:
            out[key] = value
    return out


class _Builder:
    __slots__ = ("block", "citations", "parts", "signature", "stopped")

    def __init__(self, block: ContentBlock) -> None:
        self.block = block
        self.parts: list[str] = []
        self.signature: str | None = None
        self.citations: list[JSONValue] = []
        self.stopped = False

    def finish(self) -> ContentBlock:
        b = self.block
        if isinstance(b, TextBlock):
            if not self.parts and not self.citations:
                return b
            return TextBlock(
                text=b.text + "".join(self.parts),
                citations=b.citations + tuple(self.citations),
                cache_control=b.cache_control,
            )
        if isinstance(b, ToolCall):
            if not self.parts:
                return b
            args, raw = parse_tool_arguments("".join(self.parts))
            return ToolCall(
                id=b.id,
                name=b.name,
                arguments=args,
                raw_arguments=raw,
                signature=b.signature,
                provider=b.provider,
            )
        if isinstance(b, ThinkingBlock):
            sig = self.signature if self.signature is not None else b.signature
            return ThinkingBlock(
                thinking=b.thinking + "".join(self.parts), signature=sig, provider=b.provider
            )
        if isinstance(b, ServerToolCall) and self.parts:
            args, _ = parse_tool_arguments("".join(self.parts))
            return ServerToolCall(id=b.id, name=b.name, input=args, provider=b.provider)
        return b

    def salvage(self) -> ContentBlock | None:
        """The block as far as it is safe to keep, or None."""
        b = self.block
        if self.stopped:
            return self.finish()
        if isinstance(b, TextBlock):
            out = self.finish()
            return out if isinstance(out, TextBlock) and out.text else None
        if isinstance(b, ToolCall):
            text = "".join(self.parts)
            _, raw = parse_tool_arguments(text)
            return self.finish() if raw is None and text.strip() else None
        return None  # unfinished thinking, server calls and others are dropped


class ResponseAccumulator:
    """Accumulate stream events into a :class:`ModelResponse`.

    Args:
        requested_model: the model the request named (kept as the response's ``requested_model``).
    """

    def __init__(self, requested_model: str | None = None) -> None:
        self.requested_model = requested_model
        self.id: str | None = None
        self.model: str | None = None
        self.usage: Usage | None = None
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.stop_details: JSONValue = None
        self.provider_state: ProviderState | None = None
        self.content_started = False
        self.complete = False
        self.usage_reported = False
        self._blocks: dict[int, _Builder] = {}

    def add(self, event: StreamEvent) -> None:
        """Fold one event in.

        Args:
            event: the next stream event.
        """
        if isinstance(event, ContentBlockDelta):
            b = self._blocks.get(event.index)
            if b is None:
                raise StreamInterruptedError(f"delta for unknown content block {event.index}")
            d = event.delta
            if isinstance(d, TextDelta):
                b.parts.append(d.text)
            elif isinstance(d, InputJSONDelta):
                b.parts.append(d.partial_json)
            elif isinstance(d, ThinkingDelta):
                b.parts.append(d.thinking)
            elif isinstance(d, SignatureDelta):
                b.signature = d.signature
            elif isinstance(d, CitationsDelta):  # pyright: ignore[reportUnnecessaryIsInstance]
                b.citations.append(d.citation)
        elif isinstance(event, ContentBlockStart):
            self.content_started = True
            self._blocks[event.index] = _Builder(event.block)
        elif isinstance(event, ContentBlockStop):
            b = self._blocks.get(event.index)
            if b is not None:
                b.stopped = True
        elif isinstance(event, MessageDelta):
            self._message_delta(event)
        elif isinstance(event, MessageStart):
            self.id = event.id or self.id
            self.model = event.model or self.model
            if event.usage is not None:
                self.usage = event.usage
        elif isinstance(event, MessageStop):
            self.complete = True
        elif not isinstance(event, Ping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"unknown stream event {event!r}")

    def _message_delta(self, event: MessageDelta) -> None:
        if event.stop_reason is not None:
            self.stop_reason = event.stop_reason
        if event.stop_sequence is not None:
            self.stop_sequence = event.stop_sequence
        if event.stop_details is not None:
            self.stop_details = event.stop_details
        if event.usage is not None:
            self.usage = event.usage
            self.usage_reported = True
        if event.provider_state is not None:
            self.provider_state = event.provider_state

    def _ordered(self) -> list[_Builder]:
        blocks = self._blocks
        keys = list(blocks)
        if keys != sorted(keys):  # providers send blocks in index order; rarely not
            keys.sort()
        return [blocks[i] for i in keys]

    def response(self) -> ModelResponse:
        """The complete response; raises ``StreamInterruptedError`` if the stream did not end."""
        if not self.complete:
            raise StreamInterruptedError("the stream ended without its end marker")
        return ModelResponse(
            content=tuple([b.finish() for b in self._ordered()]),
            stop_reason=self.stop_reason,
            stop_details=self.stop_details,
            stop_sequence=self.stop_sequence,
            usage=self.usage if self.usage is not None else Usage(known=False),
            id=self.id,
            model=self.model,
            requested_model=self.requested_model,
            provider_state=self.provider_state,
        )

    def partial(self) -> tuple[ContentBlock, ...]:
        """What an interrupted stream leaves that is safe to keep in history."""
        kept = [b for b in (x.salvage() for x in self._ordered()) if b is not None]
        answered = {b.tool_use_id for b in kept if isinstance(b, ServerToolResult)}
        return tuple(
            b for b in kept if not (isinstance(b, ServerToolCall) and b.id not in answered)
        )

    @property
    def usage_known(self) -> bool:
        """True once the usage frame (``message_delta`` usage) arrived, or the stream ended."""
        return self.usage_reported or (self.complete and self.usage is not None)


def response_to_events(response: ModelResponse) -> Iterator[StreamEvent]:
    """The stream a provider would have sent for ``response``.

    Args:
        response: a whole response.
    """
    yield MessageStart(id=response.id, model=response.model, usage=None)
    for i, block in enumerate(response.content):
        if isinstance(block, TextBlock):
            yield ContentBlockStart(index=i, block=TextBlock(text="", cache_control=None))
            if block.text:
                yield ContentBlockDelta(index=i, delta=TextDelta(text=block.text))
            for c in block.citations:
                yield ContentBlockDelta(index=i, delta=CitationsDelta(citation=c))
        elif isinstance(block, ToolCall):
            start = ToolCall(
                id=block.id, name=block.name, signature=block.signature, provider=block.provider
            )
            yield ContentBlockStart(index=i, block=start)
            raw = block.raw_arguments
            if raw is None and block.arguments:
                raw = json.dumps(dict(block.arguments), separators=(",", ":"))
            if raw:
                yield ContentBlockDelta(index=i, delta=InputJSONDelta(partial_json=raw))
        elif isinstance(block, ThinkingBlock):
            yield ContentBlockStart(
                index=i, block=ThinkingBlock(thinking="", signature="", provider=block.provider)
            )
            if block.thinking:
                yield ContentBlockDelta(index=i, delta=ThinkingDelta(thinking=block.thinking))
            if block.signature:
                yield ContentBlockDelta(index=i, delta=SignatureDelta(signature=block.signature))
        else:
            yield ContentBlockStart(index=i, block=block)
        yield ContentBlockStop(index=i)
    yield MessageDelta(
        stop_reason=response.stop_reason,
        stop_sequence=response.stop_sequence,
        stop_details=response.stop_details,
        usage=response.usage,
        provider_state=response.provider_state,
    )
    yield MessageStop()
