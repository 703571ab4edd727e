"""Gemini request and response mapping (``google-genai`` REST shapes, as plain dicts).

Tool results become ``functionResponse`` parts of a user turn; a thought signature on a
function call is kept on ``ToolCall.signature`` (base64) and sent back on the same part, only to
Gemini; signatures on other parts live in ``provider_state``. Calls without ids get
``call_<n>``. Thought parts become thinking blocks stamped ``google`` and go back only to Gemini.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, cast

from dive.llm import ModelRequest, ModelResponse, Usage
from dive.messages import (
    Base64Source,
    ContentBlock,
    ImageBlock,
    JSONValue,
    Message,
    ProviderState,
    TextBlock,
    ThinkingBlock,
    ToolCall,
)
from dive.providers._history import sendable

__all__ = ["LABEL", "build_config", "build_contents", "map_response", "map_usage"]

LABEL = "google"
Json = dict[str, Any]


def _bytes(signature: str) -> bytes:
    """Signatures come back from the SDK as URL-safe base64; accept either alphabet."""
    padded = signature + "=" * (-len(signature) % 4)
    return base64.urlsafe_b64decode(padded.replace("+", "-").replace("/", "_"))


def _part_of(block: ContentBlock) -> Json | None:
    if isinstance(block, TextBlock):
        return {"text": block.text} if block.text else None
    if isinstance(block, ImageBlock) and isinstance(block.source, Base64Source):
        return {"inline_data": {"mime_type": block.source.media_type, "data": block.source.data}}
    if isinstance(block, ThinkingBlock) and block.provider == LABEL:
        part: Json = {"text": block.thinking, "thought": True}
        if block.signature:
            part["thought_signature"] = _bytes(block.signature)
        return part
    if isinstance(block, ToolCall):
        part = {
            "function_call": {"name": block.name, "args": dict(block.arguments), "id": block.id}
        }
        if block.signature and block.provider == LABEL:
            part["thought_signature"] = _bytes(block.signature)
        return part
    return None


def _text_signatures(m: Message) -> dict[int, str]:
    """Signatures of non-call parts, by content index, from Gemini's own provider state."""
    state = m.provider_state
    if state is None or state.provider != LABEL or not isinstance(state.data, list):
        return {}
    out: dict[int, str] = {}
    for entry in state.data:
        if isinstance(entry, dict) and isinstance(entry.get("block"), int):
            out[cast(int, entry["block"])] = str(entry.get("signature") or "")
    return out


def build_contents(messages: Sequence[Message]) -> tuple[list[Json], list[str]]:
    """Gemini ``contents`` and the text of any system-role messages.

    A call without a result is answered (``sendable``) right after the results of its group,
    as a ``function_response`` whose response is ``{"error": <Unknown result text>}``.
    """
    contents: list[Json] = []
    system: list[str] = []
    names: dict[str, str] = {}
    for m in sendable(messages):
        if m.role == "system":
            if m.text:
                system.append(m.text)
            continue
        if m.role == "tool":
            r = m.tool_result
            if r is None:
                continue
            name = names.pop(r.tool_call_id, r.name or "")
            key = "error" if r.is_error else "output"
            part: Json = {
                "function_response": {
                    "name": name,
                    "id": r.tool_call_id,
                    "response": {key: r.structured if r.structured is not None else r.text},
                }
            }
            _append(contents, "user", [part])
            continue
        role = "model" if m.role == "assistant" else "user"
        signed = _text_signatures(m)
        parts: list[Json] = []
        for i, b in enumerate(m.content):
            wire = _part_of(b)
            if wire is None:
                continue
            if i in signed and "function_call" not in wire:
                wire["thought_signature"] = _bytes(signed[i])
            parts.append(wire)
        for c in m.tool_calls:
            names[c.id] = c.name
        _append(contents, role, parts)
    return contents, system


def _append(contents: list[Json], role: str, parts: list[Json]) -> None:
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def build_config(request: ModelRequest, extra_system: Sequence[str] = ()) -> Json:
    """``GenerateContentConfig`` fields (snake_case, as the SDK's types take them)."""
    s = request.settings
    config: Json = {}
    system = "\n\n".join(t for t in (request.system, *extra_system) if t)
    if system:
        config["system_instruction"] = system
    if request.tools:
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": d.name,
                        "description": d.description,
                        "parameters_json_schema": dict(d.input_schema),
                    }
                    for d in request.tools
                ]
            }
        ]
    tc = s.tool_choice
    if tc is not None and request.tools:
        mode = {"auto": "AUTO", "any": "ANY", "tool": "ANY", "none": "NONE"}[tc.type]
        fcc: Json = {"mode": mode}
        if tc.type == "tool" and tc.name:
            fcc["allowed_function_names"] = [tc.name]
        config["tool_config"] = {"function_calling_config": fcc}
    for key, value in (
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("top_k", s.top_k),
        ("max_output_tokens", s.max_tokens),
        ("presence_penalty", s.presence_penalty),
        ("frequency_penalty", s.frequency_penalty),
    ):
        if value is not None:
            config[key] = value
    if s.stop_sequences:
        config["stop_sequences"] = list(s.stop_sequences)
    if s.response_schema is not None:
        config["response_mime_type"] = "application/json"
        config["response_json_schema"] = dict(s.response_schema)
    thinking_on = s.thinking not in (None, "disabled") or s.reasoning_budget
    if thinking_on:
        thinking: Json = {"include_thoughts": True}
        if s.reasoning_budget:
            thinking["thinking_budget"] = s.reasoning_budget
        config["thinking_config"] = thinking
    return config


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


class PartMapper:
    """Parts → content blocks, numbering calls without ids."""

    def __init__(self) -> None:
        self.calls = 0
        self.signatures: list[JSONValue] = []

    def block(self, part: Json, at: int = 0) -> ContentBlock | None:
        """The block for ``part``.

        ``at`` is the content index the block will have: signatures on non-call parts are
        recorded with it in provider state.
        """
        signature = part.get("thought_signature")
        call = part.get("function_call")
        if isinstance(call, dict):
            c = cast("Json", call)
            self.calls += 1
            return ToolCall(
                id=str(c.get("id") or f"call_{self.calls}"),
                name=str(c.get("name") or ""),
                arguments=cast("Json", c.get("args") or {}),
                signature=str(signature) if signature else None,
                provider=LABEL if signature else None,
            )
        if signature and not part.get("thought"):
            self.signatures.append({"block": at, "signature": str(signature)})
        text = part.get("text")
        if part.get("thought"):
            return ThinkingBlock(
                thinking=str(text or ""), signature=str(signature or ""), provider=LABEL
            )
        if text:
            return TextBlock(text=str(text))
        return None


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
