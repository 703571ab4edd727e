"""Response mapping: Messages API JSON (or SDK objects) → provider-neutral blocks and usage."""

from __future__ import annotations

from typing import Any

from dive.llm import ModelResponse, Usage
from dive.messages import (
    ContentBlock,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    UnknownBlock,
)

__all__ = ["map_block", "map_response", "map_usage", "sub", "to_dict"]

Json = dict[str, Any]


def to_dict(obj: Any) -> Json:
    """SDK pydantic objects and plain dicts alike, as JSON dicts (unknown fields kept)."""
    if isinstance(obj, dict):
        return obj  # pyright: ignore[reportUnknownVariableType]
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=False, warnings=False)
    raise TypeError(f"cannot read {type(obj).__name__} as JSON")


def sub(data: Json | None, key: str) -> Json:
    """``data[key]`` when it is an object, else ``{}``."""
    value: Any = (data or {}).get(key)
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def map_block(block: Json, label: str) -> ContentBlock:
    """One response content block (complete, or as started in a stream)."""
    kind = block.get("type")
    if kind == "text":
        return TextBlock(
            text=block.get("text") or "", citations=tuple(block.get("citations") or ())
        )
    if kind == "tool_use":
        return ToolCall(id=block["id"], name=block["name"], arguments=block.get("input") or {})
    if kind == "thinking":
        return ThinkingBlock(
            thinking=block.get("thinking") or "",
            signature=block.get("signature") or "",
            provider=label,
        )
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=block.get("data") or "", provider=label)
    if kind == "server_tool_use":
        return ServerToolCall(
            id=block["id"], name=block["name"], input=block.get("input") or {}, provider=label
        )
    if isinstance(kind, str) and kind.endswith("_tool_result") and "tool_use_id" in block:
        return ServerToolResult(
            tool_use_id=block["tool_use_id"],
            result_type=kind,
            content=block.get("content"),
            provider=label,
        )
    clean = {k: v for k, v in block.items() if v is not None}
    return UnknownBlock(provider=label, block_type=str(kind), data=clean)


def map_usage(raw: Json | None) -> Usage:
    """Anthropic usage (buckets already disjoint) → ``Usage``."""
    if not raw:
        return Usage(requests=1, known=False)
    creation = sub(raw, "cache_creation")
    details = sub(raw, "output_tokens_details")
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_creation_input_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        cache_read_input_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_creation_5m_input_tokens=creation.get("ephemeral_5m_input_tokens"),
        cache_creation_1h_input_tokens=creation.get("ephemeral_1h_input_tokens"),
        reasoning_tokens=details.get("thinking_tokens"),
        service_tier=raw.get("service_tier"),
        requests=1,
    )


def map_response(raw: Json, label: str, requested: str) -> ModelResponse:
    """A complete (non-streamed) response."""
    return ModelResponse(
        content=tuple(map_block(b, label) for b in raw.get("content") or ()),
        stop_reason=raw.get("stop_reason"),
        stop_sequence=raw.get("stop_sequence"),
        stop_details=raw.get("stop_details"),
        usage=map_usage(raw.get("usage")),
        id=raw.get("id"),
        model=raw.get("model"),
        requested_model=requested,
    )
