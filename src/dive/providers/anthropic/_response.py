"""Response mapping: Messages API JSON (or SDK objects) → provider-neutral blocks and usage."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

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
    if (
        isinstance(kind, str)
        and kind.endswith("_tool_result")
        and kind != "mcp_tool_result"  # pairs with an mcp_tool_use: both kept verbatim
        and "tool_use_id" in block
    ):
        return ServerToolResult(
            tool_use_id=block["tool_use_id"],
            result_type=kind,
            content=block.get("content"),
            provider=label,
        )
    clean = {k: v for k, v in block.items() if v is not None}
    return UnknownBlock(provider=label, block_type=str(kind), data=clean)


def _int(data: Json, key: str) -> int:
    value = data.get(key)
    return int(value) if isinstance(value, int | float) else 0


def _opt_int(data: Json, key: str) -> int | None:
    value = data.get(key)
    return int(value) if isinstance(value, int | float) else None


def _add_opt(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else a + b


def _compaction_passes(raw: Json) -> list[Json]:
    """The ``usage.iterations`` entries of server-side compaction passes.

    Their tokens are billed but, unlike the ``message`` iterations, not included in the
    top-level fields.
    """
    entries: Any = raw.get("iterations")
    if not isinstance(entries, list):
        return []
    passes: list[Json] = []
    for entry in cast(list[Any], entries):
        if isinstance(entry, dict) and cast(Json, entry).get("type") == "compaction":
            passes.append(cast(Json, entry))
    return passes


def map_usage(raw: Json | None) -> Usage:
    """Anthropic usage (buckets already disjoint) → ``Usage``.

    Compaction passes (``usage.iterations`` of type ``compaction``) are added to the token
    counts; ``server_tool_use`` gives the web search and fetch requests.
    """
    if not raw:
        return Usage(requests=1, known=False)
    creation = sub(raw, "cache_creation")
    details = sub(raw, "output_tokens_details")
    servers = sub(raw, "server_tool_use")
    usage = Usage(
        input_tokens=_int(raw, "input_tokens"),
        output_tokens=_int(raw, "output_tokens"),
        cache_creation_input_tokens=_int(raw, "cache_creation_input_tokens"),
        cache_read_input_tokens=_int(raw, "cache_read_input_tokens"),
        cache_creation_5m_input_tokens=_opt_int(creation, "ephemeral_5m_input_tokens"),
        cache_creation_1h_input_tokens=_opt_int(creation, "ephemeral_1h_input_tokens"),
        reasoning_tokens=_opt_int(details, "thinking_tokens"),
        web_search_requests=_opt_int(servers, "web_search_requests"),
        web_fetch_requests=_opt_int(servers, "web_fetch_requests"),
        service_tier=raw.get("service_tier"),
        requests=1,
    )
    for entry in _compaction_passes(raw):
        entry_creation = sub(entry, "cache_creation")
        usage = replace(
            usage,
            input_tokens=usage.input_tokens + _int(entry, "input_tokens"),
            output_tokens=usage.output_tokens + _int(entry, "output_tokens"),
            cache_creation_input_tokens=usage.cache_creation_input_tokens
            + _int(entry, "cache_creation_input_tokens"),
            cache_read_input_tokens=usage.cache_read_input_tokens
            + _int(entry, "cache_read_input_tokens"),
            cache_creation_5m_input_tokens=_add_opt(
                usage.cache_creation_5m_input_tokens,
                _opt_int(entry_creation, "ephemeral_5m_input_tokens"),
            ),
            cache_creation_1h_input_tokens=_add_opt(
                usage.cache_creation_1h_input_tokens,
                _opt_int(entry_creation, "ephemeral_1h_input_tokens"),
            ),
        )
    return usage


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
