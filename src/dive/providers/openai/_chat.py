"""Chat Completions: request mapping, response mapping and stream handling.

Each tool result is its own ``role: "tool"`` message; thinking and provider state are never
sent. Streams are turned into dive's Anthropic-shaped events: text and each tool call (keyed
by the chunk's ``index``) become content blocks. A stream is complete once a
``finish_reason`` arrived; one that ends without it was interrupted. ``mcp_servers`` are
refused (Chat Completions has no remote MCP tool).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from dive.errors import StreamInterruptedError, UnsupportedSettingError
from dive.llm import (
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    InputJSONDelta,
    MessageDelta,
    MessageStart,
    MessageStop,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    StreamEvent,
    TextDelta,
    parse_tool_arguments,
)
from dive.messages import (
    Base64Source,
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolCall,
    UrlSource,
)
from dive.providers._history import sendable
from dive.providers.openai._errors import stream_error
from dive.providers.openai._usage import as_json, chat_usage, obj

__all__ = ["DONE", "ChatMapper", "chat_request", "chat_response", "sse_data"]

DONE: dict[str, Any] = {"__dive_done__": True}
"""Marks ``data: [DONE]`` in a chunk stream."""

Json = dict[str, Any]


def _user_content(m: Message) -> str | list[Json]:
    parts: list[Json] = []
    for b in m.content:
        if isinstance(b, TextBlock) and b.text:
            parts.append({"type": "text", "text": b.text})
        elif isinstance(b, ImageBlock):
            src = b.source
            if isinstance(src, UrlSource):
                parts.append({"type": "image_url", "image_url": {"url": src.url}})
            elif isinstance(src, Base64Source):
                url = f"data:{src.media_type};base64,{src.data}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _messages(system: str, history: Sequence[Message], role: str) -> list[Json]:
    """Chat messages; a call without a result is answered after the results of its group."""
    out: list[Json] = [{"role": role, "content": system}] if system else []
    for m in sendable(history):
        if m.role == "system":
            out.append({"role": role, "content": m.text})
        elif m.role == "user":
            content = _user_content(m)
            if content:
                out.append({"role": "user", "content": content})
        elif m.role == "tool":
            r = m.tool_result
            if r is not None:
                out.append({"role": "tool", "tool_call_id": r.tool_call_id, "content": r.text})
        else:
            msg: Json = {"role": "assistant", "content": m.text or None}
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.raw_arguments
                        if c.raw_arguments is not None
                        else json.dumps(dict(c.arguments)),
                    },
                }
                for c in m.tool_calls
            ]
            if calls:
                msg["tool_calls"] = calls
            if msg["content"] is not None or calls:
                out.append(msg)
    return out


def check_chat_settings(s: ModelSettings) -> None:
    """Refuse what Chat Completions cannot do: remote MCP servers.

    Raises:
        UnsupportedSettingError: ``mcp_servers`` is set.
    """
    if s.mcp_servers:
        raise UnsupportedSettingError(
            "mcp_servers cannot be sent through Chat Completions, which has no remote MCP "
            "tool: use OpenAIResponsesModel ('openai:' models), or connect the server with "
            "dive.mcp and pass it as a toolset"
        )


def chat_request(request: ModelRequest, model: str, *, system_role: str = "system") -> Json:
    """Keyword arguments for ``client.chat.completions.create`` (without ``stream``).

    Args:
        request: the provider-neutral request.
        model: the model id.
        system_role: the role the system prompt is sent with (``system`` or ``developer``).

    Raises:
        UnsupportedSettingError: a setting Chat Completions cannot honour (``mcp_servers``).
    """
    check_chat_settings(request.settings)
    s = request.settings
    kwargs: Json = {
        "model": model,
        "messages": _messages(request.system, request.messages, system_role),
    }
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": d.name,
                    "description": d.description,
                    "parameters": dict(d.input_schema),
                },
            }
            for d in request.tools
        ]
        if s.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = s.parallel_tool_calls
    tc = s.tool_choice
    if tc is not None and (request.tools or tc.type == "none"):
        kwargs["tool_choice"] = (
            {"type": "function", "function": {"name": tc.name}}
            if tc.type == "tool"
            else {"any": "required"}.get(tc.type, tc.type)
        )
    if s.max_tokens is not None:
        kwargs["max_completion_tokens"] = s.max_tokens
    for key, value in (
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("presence_penalty", s.presence_penalty),
        ("frequency_penalty", s.frequency_penalty),
        ("service_tier", s.service_tier),
    ):
        if value is not None:
            kwargs[key] = value
    if s.stop_sequences:
        kwargs["stop"] = list(s.stop_sequences)
    if s.reasoning_effort is not None:
        kwargs["reasoning_effort"] = s.reasoning_effort
    if s.response_schema is not None:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": s.response_schema_name or "response",
                "schema": dict(s.response_schema),
                "strict": True,
            },
        }
    if request.prompt_cache_key:
        kwargs["prompt_cache_key"] = request.prompt_cache_key
    if s.request_headers:
        kwargs["extra_headers"] = dict(s.request_headers)
    return kwargs


def _stop(finish: str | None, refused: bool) -> str | None:
    if refused and finish in (None, "stop"):
        return "refusal"
    return finish


def chat_response(raw: Json, requested: str) -> ModelResponse:
    """A complete (non-streamed) Chat Completions response."""
    choices = cast("list[Json]", raw.get("choices") or [{}])
    choice = choices[0]
    message = obj(choice, "message")
    blocks: list[ContentBlock] = []
    text = message.get("content") or message.get("refusal")
    if text:
        blocks.append(TextBlock(text=str(text)))
    for i, call in enumerate(message.get("tool_calls") or ()):
        fn = obj(call, "function")
        args, bad = parse_tool_arguments(str(fn.get("arguments") or ""))
        blocks.append(
            ToolCall(
                id=str(call.get("id") or f"call_{i}"),
                name=str(fn.get("name") or ""),
                arguments=args,
                raw_arguments=bad,
            )
        )
    return ModelResponse(
        content=tuple(blocks),
        stop_reason=_stop(choice.get("finish_reason"), bool(message.get("refusal"))),
        usage=chat_usage(obj(raw, "usage"), raw.get("service_tier")),
        id=raw.get("id"),
        model=raw.get("model"),
        requested_model=requested,
    )


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event in ``lines`` (text lines, without line ends).

    Several ``data:`` lines of one event are joined with newlines; comments, ``event:``,
    ``id:`` and ``retry:`` fields are ignored; an event is complete at its blank line, so an
    event cut off by the end of the stream is dropped, as the SSE specification says.
    """
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)


class ChatMapper:
    """Chat Completions chunks → dive stream events, for one attempt."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.started = False
        self.next_index = 0
        self.text_index: int | None = None
        self.calls: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.refused = False
        self.usage: Json | None = None
        self.tier: Any = None
        self.done = False

    def _open(self, block: ContentBlock) -> tuple[int, StreamEvent]:
        index = self.next_index
        self.next_index += 1
        return index, ContentBlockStart(index=index, block=block)

    def feed(self, raw: Any) -> list[StreamEvent]:
        if raw is DONE:
            self.done = True
            return []
        chunk = as_json(raw)
        if chunk.get("error"):
            raise stream_error(self.provider, chunk)
        out: list[StreamEvent] = []
        if not self.started:
            self.started = True
            out.append(MessageStart(id=chunk.get("id"), model=chunk.get("model")))
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        self.tier = chunk.get("service_tier") or self.tier
        for choice in chunk.get("choices") or ():
            delta = obj(choice, "delta")
            text = delta.get("content") or delta.get("refusal")
            if delta.get("refusal"):
                self.refused = True
            if text:
                if self.text_index is None:
                    self.text_index, ev = self._open(TextBlock(text=""))
                    out.append(ev)
                out.append(
                    ContentBlockDelta(index=self.text_index, delta=TextDelta(text=str(text)))
                )
            for call in delta.get("tool_calls") or ():
                out.extend(self._call(call))
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return out

    def _call(self, call: Json) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        key = int(call.get("index") or 0)
        fn = obj(call, "function")
        if key not in self.calls:
            block = ToolCall(
                id=str(call.get("id") or f"call_{key}"), name=str(fn.get("name") or "")
            )
            self.calls[key], ev = self._open(block)
            out.append(ev)
        fragment = fn.get("arguments")
        if fragment:
            out.append(
                ContentBlockDelta(
                    index=self.calls[key], delta=InputJSONDelta(partial_json=str(fragment))
                )
            )
        return out

    def finish(self) -> list[StreamEvent]:
        if self.finish_reason is None and self.done:
            self.finish_reason = "stop"  # [DONE] alone is a valid end
        if self.finish_reason is None:
            err = StreamInterruptedError(
                f"{self.provider}: the stream ended without a finish_reason", provider=self.provider
            )
            err.retryable = True  # nothing may have been delivered: the loop decides
            raise err
        out: list[StreamEvent] = []
        indexes = sorted(self.calls.values())
        if self.text_index is not None:
            indexes = sorted([self.text_index, *indexes])
        out.extend(ContentBlockStop(index=i) for i in indexes)
        out.append(
            MessageDelta(
                stop_reason=_stop(self.finish_reason, self.refused),
                usage=chat_usage(self.usage, self.tier),
            )
        )
        out.append(MessageStop())
        return out
