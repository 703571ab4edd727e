"""Request mapping: a provider-neutral ``ModelRequest`` → Messages API keyword arguments.

Builds fresh wire dicts for every request (so cache markers and the answers to dangling calls
never touch stored history): system blocks, tools sorted by name, tool choice, thinking and
effort per the model's capabilities, sampling parameters dropped or forced per family, and
messages regrouped (each run of tool messages becomes one user message, results first).
Thinking, redacted thinking, server-tool pairs and unknown blocks go back only to the provider
that produced them; unsigned thinking is dropped.

Text that is empty or only whitespace is never sent (the API answers ``400 messages: text
content blocks must contain non-whitespace text``), though the record keeps it: real responses
carry such blocks (a blank-line text after adaptive thinking, ``" "`` around a paused web search).
A message left with no content is dropped whole; neighbours of one role then travel as one
message, which the API accepts (it merges consecutive same-role messages itself).

``mcp_servers`` become the MCP connector's ``mcp_servers`` field and ``mcp_toolset`` tools
(``_mcp``), with its beta flag.

Setting warnings (a sampling parameter dropped, a budget mapped to adaptive thinking, an effort
clamped or dropped, an unknown model) go to ``warn`` with the shared texts of
``dive.providers``; ``AnthropicModel`` passes a ``WarnOnce``, so each is logged once per
model, or once per ``settings_warnings()`` block (the executor opens one per execute).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from dive.errors import UnsupportedSettingError
from dive.llm import ModelRequest, ModelSettings
from dive.messages import (
    Base64Source,
    CacheControl,
    ContentBlock,
    DocumentBlock,
    FileSource,
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    UnknownBlock,
    UrlSource,
)
from dive.messages.codec import to_jsonable
from dive.providers._history import sendable
from dive.providers._warnings import (
    EFFORT_DROPPED,
    TEMPERATURE_DROPPED,
    THINKING_ADAPTIVE,
    effort_clamped,
    unknown_model,
)
from dive.providers._warnings import WarnOnce as SharedWarnOnce
from dive.providers.anthropic._cache import place_markers
from dive.providers.anthropic._capabilities import Capabilities, capabilities_for
from dive.providers.anthropic._mcp import MCP_BETA, mcp_connector

__all__ = ["WarnOnce", "build_request"]

log = logging.getLogger("dive.providers.anthropic")

Json = dict[str, Any]
Warn = Callable[[str], None]


def _log_warning(message: str) -> None:
    log.warning("%s", message)


class WarnOnce(SharedWarnOnce):
    """Logs each distinct warning once (per model instance, or per ``settings_warnings``)."""

    def __init__(self) -> None:
        super().__init__(log)


def _cc(cc: CacheControl | None) -> Json | None:
    if cc is None:
        return None
    out: Json = {"type": "ephemeral"}
    if cc.ttl == "1h":
        out["ttl"] = "1h"
    return out


def _with_cc(block: Json, cc: CacheControl | None) -> Json:
    marker = _cc(cc)
    if marker is not None:
        block["cache_control"] = marker
    return block


def _source(src: Any) -> Json:
    if isinstance(src, Base64Source):
        return {"type": "base64", "media_type": src.media_type, "data": src.data}
    if isinstance(src, UrlSource):
        return {"type": "url", "url": src.url}
    if isinstance(src, FileSource):
        return {"type": "file", "file_id": src.file_id}
    assert isinstance(src, TextSource)
    return {"type": "text", "media_type": src.media_type, "data": src.data}


def _media(block: TextBlock | ImageBlock | DocumentBlock) -> Json | None:
    if isinstance(block, TextBlock):
        if not block.text.strip():
            return None  # the API refuses empty and whitespace-only text
        out: Json = {"type": "text", "text": block.text}
        if block.citations:
            out["citations"] = list(block.citations)
        return _with_cc(out, block.cache_control)
    if isinstance(block, ImageBlock):
        return _with_cc({"type": "image", "source": _source(block.source)}, block.cache_control)
    doc: Json = {"type": "document", "source": _source(block.source)}
    if block.title:
        doc["title"] = block.title
    if block.context:
        doc["context"] = block.context
    if block.citations:
        doc["citations"] = {"enabled": True}
    return _with_cc(doc, block.cache_control)


def _tool_result(result: ToolResult) -> Json:
    content = [b for b in (_media(c) for c in result.content) if b is not None]
    out: Json = {"type": "tool_result", "tool_use_id": result.tool_call_id}
    if content:
        out["content"] = content
    if result.is_error:
        out["is_error"] = True
    return _with_cc(out, result.cache_control)


ASSISTANT_MEDIA_TEXT = (
    "[{kind} produced by another model, not shown: Claude takes {kind}s only from the user]"
)


def _assistant_media(content: Sequence[ContentBlock]) -> Sequence[ContentBlock]:
    """Images and documents an assistant turn holds (another provider's output) as a note.

    The Messages API takes media only in user turns; the note keeps the turn's shape and
    tells the model something was there.
    """
    if not any(isinstance(b, ImageBlock | DocumentBlock) for b in content):
        return content
    return [
        TextBlock(
            text=ASSISTANT_MEDIA_TEXT.format(
                kind="image" if isinstance(b, ImageBlock) else "document"
            )
        )
        if isinstance(b, ImageBlock | DocumentBlock)
        else b
        for b in content
    ]


def _block(block: ContentBlock, label: str, paired: set[str]) -> Json | None:
    """One content block on the wire, or None when it must not be sent to ``label``."""
    match block:
        case TextBlock() | ImageBlock() | DocumentBlock():
            return _media(block)
        case ToolCall():
            args = {} if block.raw_arguments is not None else dict(block.arguments)
            out: Json = {"type": "tool_use", "id": block.id, "name": block.name, "input": args}
            return _with_cc(out, block.cache_control)
        case ToolResult():
            return _tool_result(block)
        case ThinkingBlock():
            if block.provider != label or not block.signature:
                return None
            return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
        case RedactedThinkingBlock():
            return (
                {"type": "redacted_thinking", "data": block.data}
                if block.provider == label
                else None
            )
        case ServerToolCall():
            if block.provider != label or block.id not in paired:
                return None
            out = {"type": "server_tool_use", "id": block.id, "name": block.name}
            out["input"] = dict(block.input)
            return _with_cc(out, block.cache_control)
        case ServerToolResult():
            if block.provider != label or block.tool_use_id not in paired:
                return None
            out = {"type": block.result_type, "tool_use_id": block.tool_use_id}
            out["content"] = block.content
            return _with_cc(out, block.cache_control)
        case UnknownBlock():
            return dict(block.data) if block.provider == label else None


def _pairs(messages: Sequence[Message]) -> set[str]:
    """Server-tool ids with both call and result anywhere in the history.

    A paused call's result may arrive in the continuation message.
    """
    calls: set[str] = set()
    results: set[str] = set()
    for m in messages:
        for b in m.content:
            if isinstance(b, ServerToolCall):
                calls.add(b.id)
            elif isinstance(b, ServerToolResult):
                results.add(b.tool_use_id)
    return calls & results


def _append(out: list[Json], role: str, blocks: list[Json]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        prev: list[Json] = out[-1]["content"]
        if role == "user" and any(b["type"] == "tool_result" for b in blocks):
            # tool results come first in a user message; text that was there goes after them
            results = [b for b in prev if b["type"] == "tool_result"]
            others = [b for b in prev if b["type"] != "tool_result"]
            prev[:] = results + blocks + others
        else:
            prev.extend(blocks)
        return
    out.append({"role": role, "content": blocks})


def _messages(history: Sequence[Message], label: str) -> tuple[list[Json], list[str]]:
    """Wire messages, and any text of system-role messages found in the history.

    Custom messages are dropped and calls without a result answered first (``sendable``); the
    missing results land after the existing ``tool_result`` blocks, before other content of
    that user message.
    """
    out: list[Json] = []
    system_text: list[str] = []
    messages = sendable(history)
    paired = _pairs(history)
    last = -1  # only the history's own last message can be a pause_turn resend
    if history and history[-1].role == "assistant" and history[-1].kind != "custom":
        last = len(messages) - 1 - len(history[-1].tool_calls)  # its answers follow it
    for i, m in enumerate(messages):
        if m.role == "system":
            if m.text.strip():
                system_text.append(m.text)
            continue
        if i == last and m.role == "assistant":  # a pause_turn resend: content as is
            paired = paired | {b.id for b in m.content if isinstance(b, ServerToolCall)}
        content = _assistant_media(m.content) if m.role == "assistant" else m.content
        blocks = [b for b in (_block(c, label, paired) for c in content) if b is not None]
        role = "assistant" if m.role == "assistant" else "user"
        _append(out, role, blocks)
    return out, system_text


def _tool(defn: ToolDefinition) -> Json:
    provider_type = defn.metadata.get("anthropic.type")
    if provider_type:
        out: Json = {"type": provider_type, "name": defn.metadata.get("anthropic.name", defn.name)}
        params = defn.metadata.get("anthropic.params")
        if params:
            out.update(json.loads(params))
    else:
        out = {"name": defn.name, "input_schema": dict(defn.input_schema)}
        if defn.description:
            out["description"] = defn.description
    return _with_cc(out, defn.cache_control)


def _tool_choice(s: ModelSettings) -> Json | None:
    tc = s.tool_choice
    disable = s.parallel_tool_calls is False or (tc is not None and tc.disable_parallel)
    if tc is None:
        return {"type": "auto", "disable_parallel_tool_use": True} if disable else None
    out: Json = {"type": tc.type}
    if tc.type == "tool":
        out["name"] = tc.name
    if disable and tc.type != "none":
        out["disable_parallel_tool_use"] = True
    return out


def _thinking_ok(messages: list[Json]) -> bool:
    """With thinking on, the last assistant turn with tool use must start with thinking."""
    for m in reversed(messages):
        if m["role"] == "assistant" and any(b["type"] == "tool_use" for b in m["content"]):
            first = m["content"][0]["type"] if m["content"] else ""
            return first in ("thinking", "redacted_thinking")
    return True


def _thinking(s: ModelSettings, caps: Capabilities, max_tokens: int, warn: Warn) -> Json | None:
    mode = s.thinking
    if mode is None and s.reasoning_budget:
        mode = "enabled"
    if mode is None or mode == "disabled" or not caps.thinking:
        return None
    display = s.thinking_display
    if mode == "enabled" and caps.adaptive_only:
        warn(THINKING_ADAPTIVE)
        mode = "adaptive"
        display = display or "summarized"  # a budget asked to see the thinking
    out: Json = {"type": mode}
    if mode == "enabled":
        budget = s.reasoning_budget or max(1024, min(max_tokens // 2, 16000))
        if budget >= max_tokens:
            raise UnsupportedSettingError(
                f"reasoning_budget ({budget}) must be smaller than max_tokens ({max_tokens})"
            )
        out["budget_tokens"] = max(budget, 1024)
    if display:
        out["display"] = display
    return out


def _sampling(
    kwargs: Json, s: ModelSettings, caps: Capabilities, thinking: bool, warn: Warn
) -> None:
    if s.temperature is not None:
        if not caps.temperature:
            warn(TEMPERATURE_DROPPED)
        elif thinking and s.temperature != 1:
            warn("temperature must be 1 with thinking; dropped")
        else:
            kwargs["temperature"] = s.temperature
    if s.top_k is not None:
        if thinking:
            warn("top_k is not accepted with thinking; dropped")
        else:
            kwargs["top_k"] = s.top_k
    if s.top_p is not None:
        kwargs["top_p"] = max(s.top_p, 0.95) if thinking else s.top_p


def _effort(s: ModelSettings, caps: Capabilities, warn: Warn) -> str | None:
    effort = s.reasoning_effort
    if effort is None:
        return None
    if not caps.effort:
        warn(EFFORT_DROPPED)
        return None
    if effort == "minimal":
        effort = "low"
    if effort not in caps.efforts:
        to = caps.clamp.get(effort, caps.efforts[-1])
        warn(effort_clamped(effort, to))
        effort = to
    return effort


def check_settings(s: ModelSettings) -> None:
    """Refuse settings the Messages API rejects together (before any request is made)."""
    tc = s.tool_choice
    thinking_on = s.thinking not in (None, "disabled") or bool(s.reasoning_budget)
    if thinking_on and tc is not None and tc.forces_tool:
        raise UnsupportedSettingError(
            f"ModelSettings(thinking={s.thinking!r}) cannot be combined with "
            f"tool_choice={tc.type!r}: the Anthropic API refuses a forced tool choice while "
            "thinking. Use tool_choice auto, or turn thinking off (thinking='disabled')"
        )


def build_request(
    request: ModelRequest,
    model: str,
    label: str = "anthropic",
    *,
    warn: Warn | None = None,
    caps: Capabilities | None = None,
) -> Json:
    """The Messages API body for ``request`` (``client.messages.create`` without ``stream``).

    Args:
        request: the provider-neutral request.
        model: the Claude model id.
        label: the provider label of this client; blocks another provider produced (thinking,
            server tools, unknown blocks) are not sent.
        warn: receives each warning about a dropped or adjusted setting (default: logged to
            ``dive.providers.anthropic`` every time).
        caps: the model's capabilities, when known better than the table's (what the API
            answered for this model); default ``capabilities_for(model)``.

    Raises:
        UnsupportedSettingError: a combination the API refuses (thinking with a forced tool
            choice, a thinking budget not below ``max_tokens``).
    """
    warn = warn or _log_warning
    s = request.settings
    caps = caps or capabilities_for(model)
    if not caps.known:
        warn(unknown_model(model))
    check_settings(s)
    max_tokens = s.max_tokens or caps.default_max_tokens
    messages, extra_system = _messages(request.messages, label)
    kwargs: Json = {"model": model, "max_tokens": max_tokens, "messages": messages}
    system_text = "\n\n".join(t for t in (request.system, *extra_system) if t and t.strip())
    system = [{"type": "text", "text": system_text}] if system_text else []
    tools = [_tool(d) for d in sorted(request.tools, key=lambda d: d.name)]
    mcp_servers, toolsets = mcp_connector(s)
    tools.extend(toolsets)
    thinking = _thinking(s, caps, max_tokens, warn)
    if thinking is not None and not _thinking_ok(messages):
        # about this request's history, not the settings: logged every time
        _log_warning("the last tool-use turn does not start with thinking; thinking omitted")
        thinking = None
    if s.caching is not False:
        first = bool(s.cache_first_user_block)
        place_markers(tools, system, messages, ttl=s.cache_ttl or "5m", first_block=first)
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = tools
    choice = _tool_choice(s)
    if choice is not None and (tools or choice["type"] == "none"):
        kwargs["tool_choice"] = choice
    if thinking is not None:
        kwargs["thinking"] = thinking
    output_config: dict[str, Any] = {}
    effort = _effort(s, caps, warn)
    if effort is not None:
        output_config["effort"] = effort
    if s.response_schema is not None:  # structured outputs: the answer is JSON of the schema
        output_config["format"] = {"type": "json_schema", "schema": dict(s.response_schema)}
    if output_config:
        kwargs["output_config"] = output_config
    _sampling(kwargs, s, caps, thinking is not None, warn)
    if s.stop_sequences:
        kwargs["stop_sequences"] = list(s.stop_sequences)
    if s.metadata and "user_id" in s.metadata:
        kwargs["metadata"] = {"user_id": s.metadata["user_id"]}
    if s.service_tier:
        kwargs["service_tier"] = s.service_tier
    headers = dict(s.request_headers or {})
    if s.context_management is not None:
        kwargs["context_management"] = to_jsonable(s.context_management)
        _add_betas(headers, _context_betas(s.context_management))
    if mcp_servers:
        kwargs["mcp_servers"] = mcp_servers
        _add_betas(headers, [MCP_BETA])
    if headers:
        kwargs["extra_headers"] = headers
    return kwargs


_EDIT_BETAS = {"compact": "compact-2026-01-12"}
_CONTEXT_BETA = "context-management-2025-06-27"


def _context_betas(cm: Mapping[str, Any]) -> list[str]:
    """The beta flags a ``context_management`` value needs (compaction or context editing)."""
    betas: list[str] = []
    edits: Any = cm.get("edits")
    items: list[Any] = list(cast("Sequence[Any]", edits)) if isinstance(edits, list | tuple) else []
    for edit in items:
        kind = ""
        if isinstance(edit, Mapping):
            kind = str(cast("Mapping[str, Any]", edit).get("type", ""))
        beta = _EDIT_BETAS.get(kind.split("_")[0], _CONTEXT_BETA)
        if beta not in betas:
            betas.append(beta)
    return betas or [_CONTEXT_BETA]


def _add_betas(headers: dict[str, str], betas: list[str]) -> None:
    key = next((k for k in headers if k.lower() == "anthropic-beta"), "anthropic-beta")
    present = [b.strip() for b in headers.get(key, "").split(",") if b.strip()]
    headers[key] = ",".join([*present, *(b for b in betas if b not in present)])
