"""Gemini responses → dive: parts to content blocks, usage, whole responses.

A thought signature on a function call is kept on ``ToolCall.signature`` (URL-safe base64, as
the SDK gives it) and goes back on the same part, only to Gemini; signatures on other parts live
in ``provider_state`` by content index. Calls (and code blocks) without ids get a fresh random
id (``call_<24 hex>``), unique across turns and sessions. Thought parts become thinking blocks
stamped ``google``; code execution parts server-tool blocks; images image blocks; the
candidate's grounding, citation and URL context metadata unknown blocks of those types (kept,
never sent back); any other part an unknown ``part`` block that goes back only to Gemini.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any, cast

from dive.llm import ModelResponse, Usage
from dive.messages import (
    Base64Source,
    ContentBlock,
    ImageBlock,
    JSONValue,
    ProviderState,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    UnknownBlock,
)
from dive.providers.google._contents import CODE_EXECUTION, CODE_RESULT, LABEL

__all__ = [
    "LABEL",
    "METADATA_KEYS",
    "PartMapper",
    "dumps_args",
    "map_response",
    "map_usage",
    "metadata_blocks",
    "new_id",
]

Json = dict[str, Any]

IMAGE_BLOCK_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image types an ``ImageBlock`` holds; other inline data stays an unknown part."""
METADATA_KEYS = ("grounding_metadata", "citation_metadata", "url_context_metadata")


def map_usage(raw: Json | None) -> Usage:
    """``usageMetadata`` → ``Usage`` (prompt includes cached; thoughts are output)."""
    if not raw:
        return Usage(requests=1, known=False)
    prompt = int(raw.get("prompt_token_count") or 0)
    cached = int(raw.get("cached_content_token_count") or 0)
    thoughts = raw.get("thoughts_token_count")
    output = int(raw.get("candidates_token_count") or 0) + int(thoughts or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=output,
        cache_read_input_tokens=cached,
        reasoning_tokens=int(thoughts) if thoughts is not None else None,
        requests=1,
    )


def new_id(prefix: str) -> str:
    """A fresh id for a call or code block the API sent without one (unique across sessions)."""
    return f"{prefix}_{secrets.token_hex(12)}"


def _standard_base64(data: str) -> str:
    """The SDK dumps bytes as URL-safe base64; blocks keep the standard alphabet."""
    padded = data + "=" * (-len(data) % 4)
    return base64.b64encode(base64.urlsafe_b64decode(padded)).decode()


class PartMapper:
    """Parts → content blocks: ids for calls without one, signatures of other parts.

    Text, thought and function call parts become text, thinking and tool call blocks; code
    execution parts become ``ServerToolCall`` / ``ServerToolResult`` blocks (``code_execution``,
    the part's JSON kept as their input and content); an image becomes an ``ImageBlock``; any
    other part an ``UnknownBlock`` of type ``part`` holding its JSON. Only Gemini gets these
    blocks back.
    """

    def __init__(self) -> None:
        self.signatures: list[JSONValue] = []
        self._code: str | None = None  # the executable code block awaiting its result

    def block(self, part: Json, at: int = 0) -> ContentBlock | None:
        """The block for ``part``.

        ``at`` is the content index the block will have: signatures on non-call parts are
        recorded with it in provider state.
        """
        signature = part.get("thought_signature")
        if part.get("thought"):
            return ThinkingBlock(
                thinking=str(part.get("text") or ""),
                signature=str(signature or ""),
                provider=LABEL,
            )
        call = part.get("function_call")
        if isinstance(call, dict):
            c = cast("Json", call)
            return ToolCall(
                id=str(c.get("id") or new_id("call")),
                name=str(c.get("name") or ""),
                arguments=cast("Json", c.get("args") or {}),
                signature=str(signature) if signature else None,
                provider=LABEL if signature else None,
            )
        block = self._other(part, bool(signature))
        if block is not None and signature:
            self.signatures.append({"block": at, "signature": str(signature)})
        return block

    def _other(self, part: Json, signed: bool) -> ContentBlock | None:
        code = part.get("executable_code")
        if isinstance(code, dict):
            code_json = cast("Json", code)
            self._code = str(code_json.get("id") or new_id("code"))
            return ServerToolCall(
                id=self._code, name=CODE_EXECUTION, input=code_json, provider=LABEL
            )
        result = part.get("code_execution_result")
        if isinstance(result, dict):
            result_json = cast("Json", result)
            answered = str(result_json.get("id") or self._code or new_id("code"))
            self._code = None
            return ServerToolResult(
                tool_use_id=answered, result_type=CODE_RESULT, content=result_json, provider=LABEL
            )
        inline = part.get("inline_data")
        if isinstance(inline, dict):
            blob = cast("Json", inline)
            if blob.get("mime_type") in IMAGE_BLOCK_TYPES and isinstance(blob.get("data"), str):
                source = Base64Source(
                    media_type=str(blob["mime_type"]), data=_standard_base64(str(blob["data"]))
                )
                return ImageBlock(source=source)
        rest = {k: v for k, v in part.items() if k != "thought_signature"}
        if set(rest) <= {"text"}:
            text = str(rest.get("text") or "")
            return TextBlock(text=text) if text or signed else None
        return UnknownBlock(provider=LABEL, block_type="part", data=rest)


def metadata_blocks(candidate: Json) -> list[ContentBlock]:
    """The candidate's grounding, citation and URL context metadata, as unknown blocks."""
    return [
        UnknownBlock(provider=LABEL, block_type=key, data=cast("Json", candidate[key]))
        for key in METADATA_KEYS
        if isinstance(candidate.get(key), dict) and candidate[key]
    ]


def map_response(raw: Json, requested: str, mapper: PartMapper | None = None) -> ModelResponse:
    """One complete ``GenerateContentResponse`` (as a dict)."""
    mapper = mapper or PartMapper()
    candidates = cast("list[Json]", raw.get("candidates") or [])
    if not candidates:
        feedback = cast("Json", raw.get("prompt_feedback") or {})
        reason = str(feedback.get("block_reason") or "OTHER")
        return ModelResponse(
            stop_reason=reason,
            usage=map_usage(cast("Json", raw.get("usage_metadata") or {})),
            id=raw.get("response_id"),
            model=raw.get("model_version"),
            requested_model=requested,
        )
    candidate = candidates[0]
    content = cast("Json", candidate.get("content") or {})
    blocks: list[ContentBlock] = []
    for part in content.get("parts") or ():
        block = mapper.block(cast("Json", part), len(blocks))
        if block is not None:
            blocks.append(block)
    blocks.extend(metadata_blocks(candidate))
    finish = candidate.get("finish_reason")
    state = None
    if mapper.signatures:
        state = ProviderState(provider=LABEL, api="generate_content", data=mapper.signatures)
    return ModelResponse(
        content=tuple(blocks),
        stop_reason=str(finish) if finish else None,
        usage=map_usage(cast("Json", raw.get("usage_metadata") or {})),
        id=raw.get("response_id"),
        model=raw.get("model_version"),
        requested_model=requested,
        provider_state=state,
    )


def dumps_args(args: Any) -> str:
    """Tool arguments as JSON text (for streamed input deltas)."""
    return json.dumps(args, separators=(",", ":"))
