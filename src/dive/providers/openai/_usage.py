"""OpenAI usage → dive ``Usage``.

Cached (and cache-write) tokens are taken out of the input total so the buckets are disjoint;
reasoning tokens stay a subset of output.
"""

from __future__ import annotations

from typing import Any, cast

from dive.llm import Usage

__all__ = ["as_json", "chat_usage", "obj", "responses_usage"]


def as_json(raw: Any) -> dict[str, Any]:
    """A dict from SDK pydantic objects or plain dicts."""
    if isinstance(raw, dict):
        return cast("dict[str, Any]", raw)
    to_dict = getattr(raw, "to_dict", None)
    if to_dict is not None:  # API field names, unset fields left out: replayable verbatim
        return cast("dict[str, Any]", to_dict(mode="json"))
    return cast("dict[str, Any]", raw.model_dump(mode="json", by_alias=True, exclude_unset=True))


def obj(data: Any, key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object, else ``{}``."""
    if not isinstance(data, dict):
        return {}
    value = cast("dict[str, Any]", data).get(key)
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _usage(
    total_in: int, cached: int, written: int, output: int, reasoning: Any, tier: Any
) -> Usage:
    return Usage(
        input_tokens=max(0, total_in - cached - written),
        output_tokens=output,
        cache_read_input_tokens=cached,
        cache_creation_input_tokens=written,
        reasoning_tokens=int(reasoning) if reasoning is not None else None,
        service_tier=str(tier) if tier else None,
        requests=1,
    )


def chat_usage(raw: dict[str, Any] | None, tier: Any = None) -> Usage:
    """Chat Completions usage (``prompt_tokens`` includes cached tokens)."""
    if not raw:
        return Usage(requests=1, known=False)
    details = obj(raw, "prompt_tokens_details")
    out = obj(raw, "completion_tokens_details")
    return _usage(
        int(raw.get("prompt_tokens") or 0),
        int(details.get("cached_tokens") or 0),
        int(details.get("cache_write_tokens") or 0),
        int(raw.get("completion_tokens") or 0),
        out.get("reasoning_tokens"),
        tier,
    )


def responses_usage(raw: dict[str, Any] | None, tier: Any = None) -> Usage:
    """Responses usage (``input_tokens`` includes cached tokens)."""
    if not raw:
        return Usage(requests=1, known=False)
    details = obj(raw, "input_tokens_details")
    out = obj(raw, "output_tokens_details")
    return _usage(
        int(raw.get("input_tokens") or 0),
        int(details.get("cached_tokens") or 0),
        int(details.get("cache_write_tokens") or 0),
        int(raw.get("output_tokens") or 0),
        out.get("reasoning_tokens"),
        tier,
    )
