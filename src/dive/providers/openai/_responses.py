"""Responses API: request mapping, response mapping and stream handling.

Assistant turns produced by the Responses API carry their raw output items as
``ProviderState(provider="openai", api="responses")``; those items (reasoning with
``encrypted_content``, function calls) are replayed verbatim instead of being rebuilt from
content. Other assistant turns are rebuilt from text and tool calls. A response that ends
``incomplete`` or ``failed`` is classified before its function calls (which then never run).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from dive.errors import ProviderStateError, StreamInterruptedError
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
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    Usage,
    parse_tool_arguments,
)
from dive.messages import (
    ContentBlock,
    JSONValue,
    Message,
    ProviderState,
    TextBlock,
    ThinkingBlock,
    ToolCall,
)
from dive.providers._history import sendable
from dive.providers._mcp import RemoteServer, remote_servers
from dive.providers.openai._errors import stream_error
from dive.providers.openai._usage import as_json, obj, responses_usage

__all__ = ["ResponsesMapper", "responses_request", "responses_response"]

Json = dict[str, Any]


def _replay(m: Message) -> list[Json] | None:
    state = m.provider_state
    if state is None or state.provider != "openai" or state.api != "responses":
        return None
    if not isinstance(state.data, list):
        raise ProviderStateError(
            "OpenAI Responses provider state must be a JSON array of output items"
        )
    items = [cast("Json", item) for item in state.data if isinstance(item, dict)]
    return _rekeyed(items, [c.id for c in m.tool_calls])


def _rekeyed(items: list[Json], ids: list[str]) -> list[Json]:
    """Replayed function calls carry the message's call ids (dive re-keys repeated ids)."""
    calls = [k for k, item in enumerate(items) if item.get("type") == "function_call"]
    if len(calls) != len(ids):
        return items
    out = items
    for k, new_id in zip(calls, ids, strict=True):
        if items[k].get("call_id") != new_id:
            if out is items:
                out = list(items)
            out[k] = {**items[k], "call_id": new_id}
    return out


def _input(history: Sequence[Message]) -> list[Json]:
    """Input items; a call without a result is answered after the results of its group."""
    items: list[Json] = []
    for m in sendable(history):
        if m.role in ("user", "system"):
            if m.text:
                items.append(
                    {
                        "role": "user" if m.role == "user" else "developer",
                        "content": [{"type": "input_text", "text": m.text}],
                    }
                )
        elif m.role == "tool":
            r = m.tool_result
            if r is not None:
                items.append(
                    {"type": "function_call_output", "call_id": r.tool_call_id, "output": r.text}
                )
        else:
            replayed = _replay(m)
            if replayed is not None:
                items.extend(replayed)
                continue
            if m.text:
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": m.text}],
                    }
                )
            for c in m.tool_calls:
                args = (
                    c.raw_arguments
                    if c.raw_arguments is not None
                    else json.dumps(dict(c.arguments))
                )
                items.append(
                    {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": args}
                )
    return items


def _mcp_tool(server: RemoteServer) -> Json:
    """A hosted ``mcp`` tool; approval is never asked (dive has no round trip for it)."""
    out: Json = {
        "type": "mcp",
        "server_label": server.name,
        "server_url": server.url,
        "require_approval": "never",
    }
    if server.authorization_token is not None:
        out["authorization"] = server.authorization_token
    if server.allowed_tools is not None:
        out["allowed_tools"] = list(server.allowed_tools)
    return out


def responses_request(request: ModelRequest, model: str) -> Json:
    """Keyword arguments for ``client.responses.create`` (without ``stream``).

    Args:
        request: the provider-neutral request.
        model: the model id.
    """
    s = request.settings
    kwargs: Json = {
        "model": model,
        "input": _input(request.messages),
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    if request.system:
        kwargs["instructions"] = request.system
    hosted = [_mcp_tool(server) for server in remote_servers(s) if server.enabled]
    if request.tools or hosted:
        kwargs["tools"] = [
            {
                "type": "function",
                "name": d.name,
                "description": d.description,
                "parameters": dict(d.input_schema),
            }
            for d in request.tools
        ] + hosted
    if request.tools and s.parallel_tool_calls is not None:
        kwargs["parallel_tool_calls"] = s.parallel_tool_calls
    tc = s.tool_choice
    if tc is not None and (request.tools or tc.type == "none"):
        kwargs["tool_choice"] = (
            {"type": "function", "name": tc.name}
            if tc.type == "tool"
            else {"any": "required"}.get(tc.type, tc.type)
        )
    if s.max_tokens is not None:
        kwargs["max_output_tokens"] = s.max_tokens
    if s.reasoning_effort is not None:
        kwargs["reasoning"] = {"effort": s.reasoning_effort, "summary": "auto"}
    for key, value in (
        ("temperature", s.temperature),
        ("top_p", s.top_p),
        ("service_tier", s.service_tier),
    ):
        if value is not None:
            kwargs[key] = value
    if s.response_schema is not None:
        kwargs["text"] = {
            "format": {
                "type": "json_schema",
                "name": s.response_schema_name or "response",
                "schema": dict(s.response_schema),
                "strict": True,
            }
        }
    if request.prompt_cache_key:
        kwargs["prompt_cache_key"] = request.prompt_cache_key
    if s.request_headers:
        kwargs["extra_headers"] = dict(s.request_headers)
    return kwargs


def _stop_reason(response: Json, has_calls: bool, refused: bool) -> str:
    status = response.get("status")
    if status == "incomplete":
        reason = obj(response, "incomplete_details").get("reason")
        return str(reason or "incomplete")
    if status == "failed":
        return "error"
    if status == "cancelled":
        return "cancelled"
    if refused:
        return "refusal"
    return "tool_use" if has_calls else "end_turn"


def _blocks(output: Sequence[Json]) -> tuple[list[ContentBlock], bool]:
    blocks: list[ContentBlock] = []
    refused = False
    for item in output:
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                text = (
                    part.get("text") if part.get("type") == "output_text" else part.get("refusal")
                )
                if part.get("type") == "refusal":
                    refused = True
                if text:
                    blocks.append(TextBlock(text=str(text)))
        elif kind == "function_call":
            args, bad = parse_tool_arguments(str(item.get("arguments") or ""))
            blocks.append(
                ToolCall(
                    id=str(item.get("call_id")),
                    name=str(item.get("name")),
                    arguments=args,
                    raw_arguments=bad,
                )
            )
        elif kind == "reasoning":
            summary = "".join(str(p.get("text") or "") for p in item.get("summary") or ())
            blocks.append(ThinkingBlock(thinking=summary, provider="openai"))
    return blocks, refused


def _with_searches(usage: Usage, items: list[Json]) -> Usage:
    """``usage`` with the hosted web searches the output ran (each is billed per call)."""
    n = sum(1 for i in items if i.get("type") == "web_search_call")
    return replace(usage, web_search_requests=n) if n else usage


def responses_response(raw: Json, requested: str) -> ModelResponse:
    """A complete (non-streamed) Responses API response."""
    if raw.get("status") == "failed":
        raise stream_error("openai", {"error": obj(raw, "error")})
    output = [cast("Json", i) for i in raw.get("output") or ()]
    blocks, refused = _blocks(output)
    has_calls = any(isinstance(b, ToolCall) for b in blocks)
    return ModelResponse(
        content=tuple(blocks),
        stop_reason=_stop_reason(raw, has_calls, refused),
        usage=_with_searches(responses_usage(obj(raw, "usage"), raw.get("service_tier")), output),
        id=raw.get("id"),
        model=raw.get("model"),
        requested_model=requested,
        provider_state=ProviderState(
            provider="openai", api="responses", data=cast("JSONValue", output)
        ),
    )


class ResponsesMapper:
    """Responses stream events → dive stream events, for one attempt."""

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.next_index = 0
        self.open: dict[str, int] = {}  # item id → block index
        self.items: list[Json] = []
        self.ended = False
        self.refused = False
        self.has_calls = False

    def _start(self, key: str, block: ContentBlock) -> StreamEvent:
        index = self.next_index
        self.next_index += 1
        self.open[key] = index
        return ContentBlockStart(index=index, block=block)

    def feed(self, raw: Any) -> list[StreamEvent]:
        event = as_json(raw)
        kind = str(event.get("type") or "")
        if kind == "error":
            raise stream_error(self.provider, {"error": event})
        if kind == "response.created":
            response = obj(event, "response")
            return [MessageStart(id=response.get("id"), model=response.get("model"))]
        if kind == "response.output_item.added":
            return self._added(obj(event, "item"))
        if kind == "response.output_text.delta":
            key = str(event.get("item_id"))
            out: list[StreamEvent] = []
            if key not in self.open:
                out.append(self._start(key, TextBlock(text="")))
            out.append(
                ContentBlockDelta(
                    index=self.open[key], delta=TextDelta(text=str(event.get("delta") or ""))
                )
            )
            return out
        if kind == "response.refusal.delta":
            self.refused = True
            key = str(event.get("item_id"))
            out = [] if key in self.open else [self._start(key, TextBlock(text=""))]
            out.append(
                ContentBlockDelta(
                    index=self.open[key], delta=TextDelta(text=str(event.get("delta") or ""))
                )
            )
            return out
        if kind == "response.function_call_arguments.delta":
            key = str(event.get("item_id"))
            if key in self.open:
                delta = InputJSONDelta(partial_json=str(event.get("delta") or ""))
                return [ContentBlockDelta(index=self.open[key], delta=delta)]
            return []
        if kind == "response.reasoning_summary_text.delta":
            key = str(event.get("item_id"))
            if key in self.open:
                return [
                    ContentBlockDelta(
                        index=self.open[key],
                        delta=ThinkingDelta(thinking=str(event.get("delta") or "")),
                    )
                ]
            return []
        if kind == "response.output_item.done":
            item = obj(event, "item")
            self.items.append(item)
            key = str(item.get("id"))
            return [ContentBlockStop(index=self.open[key])] if key in self.open else []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._end(obj(event, "response"))
        return []

    def _added(self, item: Json) -> list[StreamEvent]:
        kind = item.get("type")
        key = str(item.get("id"))
        if kind == "function_call":
            self.has_calls = True
            return [
                self._start(key, ToolCall(id=str(item.get("call_id")), name=str(item.get("name"))))
            ]
        if kind == "reasoning":
            return [self._start(key, ThinkingBlock(thinking="", provider="openai"))]
        return []

    def _end(self, response: Json) -> list[StreamEvent]:
        if response.get("status") == "failed":
            raise stream_error(self.provider, {"error": obj(response, "error")})
        self.ended = True
        items = self.items or [cast("Json", i) for i in response.get("output") or ()]
        return [
            MessageDelta(
                stop_reason=_stop_reason(response, self.has_calls, self.refused),
                usage=_with_searches(
                    responses_usage(obj(response, "usage"), response.get("service_tier")), items
                ),
                provider_state=ProviderState(
                    provider="openai", api="responses", data=cast("JSONValue", items)
                ),
            ),
            MessageStop(),
        ]

    def finish(self) -> list[StreamEvent]:
        if not self.ended:
            err = StreamInterruptedError(
                f"{self.provider}: the stream ended before its terminal event",
                provider=self.provider,
            )
            err.retryable = True  # nothing may have been delivered: the loop decides
            raise err
        return []
