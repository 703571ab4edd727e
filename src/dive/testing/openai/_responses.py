"""Responses: request validation (wire-apis.md C1, C4) and rendering (C2, C3).

Validation runs in this order, the first failure wins (sim choice):

1. shape: ``model``; ``input`` a string or a list of objects; message items with a role and
   content; ``function_call`` items with ``call_id``, ``name`` and string ``arguments``;
   ``function_call_output`` items with ``call_id`` and ``output``; reasoning items with ``id``
   and ``summary``; flat function tools with a ``name``; hosted ``mcp`` tools with a
   ``server_label``, a ``server_url`` (or ``connector_id``) and a ``require_approval`` of
   ``always``, ``never`` or an object (sim: the servers are never called);
   ``max_output_tokens`` ≥ 16;
2. ``previous_response_id`` names a stored response (its input and output are prepended);
3. ``item_reference`` items name a stored item;
4. reasoning items replayed: an ``encrypted_content`` must be one this simulator issued for
   that item id (sim choice: 400 ``invalid_encrypted_content``); without one, the item must
   have been stored (``store`` not false);
5. pairing over the whole context: every ``function_call_output`` matches a ``function_call``,
   then every ``function_call`` has an output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.testing.openai._chat import (
    empty_array,
    invalid_type,
    missing_parameter,
)
from dive.testing.openai._errors import invalid_request
from dive.testing.openai._render import Frame, Issuer, Usage, chunks
from dive.testing.openai._script import SimReply
from dive.testing.openai._tokens import input_items

__all__ = [
    "ResponsesRequest",
    "build_output",
    "render_response",
    "response_events",
    "validate_responses",
]

NO_TOOL_CALL = "No tool call found for function call output with call_id {call_id}."
NO_TOOL_OUTPUT = "No tool output found for function call {call_id}."
UNVERIFIED_ENCRYPTED_CONTENT = "The encrypted content for item {id} could not be verified."
ITEM_NOT_PERSISTED = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try "
    "again with `store` set to true, or remove this item from your input."
)
ITEM_NOT_FOUND = "Item with id '{id}' not found."
PREVIOUS_NOT_FOUND = "Previous response with id '{id}' not found."
MAX_OUTPUT_TOO_SMALL = (
    "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got "
    "{value} instead."
)
ENCRYPTED_INCLUDE = "reasoning.encrypted_content"
_MESSAGE_ROLES = ("user", "assistant", "system", "developer")


def _dict(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _list(value: object) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesRequest:
    """A validated Responses body.

    Attributes:
        items: the whole context: a previous response's input and output, then this input
            (item references resolved).
        new_items: this request's own input items (references resolved).
    """

    body: Mapping[str, Any]
    model: str
    stream: bool
    store: bool
    include_encrypted: bool
    include_obfuscation: bool
    tools: tuple[Any, ...]
    instructions: object
    items: tuple[dict[str, Any], ...]
    new_items: tuple[dict[str, Any], ...]


def validate_responses(
    body: Mapping[str, Any],
    *,
    previous: Callable[[str], Sequence[dict[str, Any]] | None],
    stored_item: Callable[[str], dict[str, Any] | None],
    issued_item: Callable[[str], str | None],
) -> ResponsesRequest:
    """Raise a 400 answer on the first broken rule; the checked request otherwise.

    ``previous`` maps a stored response id to its context (input then output items),
    ``stored_item`` a stored item id to the item, ``issued_item`` an ``encrypted_content`` to
    the reasoning item id it was issued for.
    """
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise missing_parameter("model")
    raw_input: object = body.get("input")
    if raw_input is not None and not isinstance(raw_input, str | list):
        raise invalid_type("input", "a string or an array", raw_input)
    items = input_items(cast(object, raw_input))
    for n, raw in enumerate(items):
        _check_item(raw, n)
    tools = body.get("tools")
    tool_list = _list(tools) if tools is not None else []
    if tool_list is None:
        raise invalid_type("tools", "an array", tools)
    for n, raw in enumerate(tool_list):
        tool = _dict(raw)
        if tool is None:
            raise invalid_type(f"tools[{n}]", "an object", raw)
        if tool.get("type") == "function" and not isinstance(tool.get("name"), str):
            raise missing_parameter(f"tools[{n}].name")
        if tool.get("type") == "mcp":
            _check_mcp_tool(tool, n)
    limit = body.get("max_output_tokens")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit < 16:
        raise invalid_request(
            MAX_OUTPUT_TOO_SMALL.format(value=limit),
            param="max_output_tokens",
            code="integer_below_min_value",
        )
    context: list[dict[str, Any]] = []
    previous_id = body.get("previous_response_id")
    if previous_id is not None:
        found = previous(str(previous_id))
        if found is None:
            raise invalid_request(
                PREVIOUS_NOT_FOUND.format(id=previous_id),
                param="previous_response_id",
                code="previous_response_not_found",
            )
        context.extend(found)
    new_items: list[dict[str, Any]] = []
    for raw in items:
        item = cast(dict[str, Any], raw)
        if item.get("type") == "item_reference":
            referenced = stored_item(str(item["id"]))
            if referenced is None:
                raise invalid_request(ITEM_NOT_FOUND.format(id=item["id"]), param="input")
            item = referenced
        new_items.append(item)
    for item in new_items:
        if item.get("type") == "reasoning":
            _check_reasoning(item, stored_item, issued_item)
    every = [*context, *new_items]
    _check_pairing(every)
    include = [str(i) for i in _list(body.get("include")) or []]
    options = _dict(body.get("stream_options")) or {}
    return ResponsesRequest(
        body=body,
        model=model,
        stream=bool(body.get("stream")),
        store=body.get("store") is not False,
        include_encrypted=ENCRYPTED_INCLUDE in include,
        include_obfuscation=options.get("include_obfuscation") is not False,
        tools=tuple(tool_list),
        instructions=body.get("instructions"),
        items=tuple(every),
        new_items=tuple(new_items),
    )


def _check_mcp_tool(tool: Mapping[str, Any], n: int) -> None:
    if not isinstance(tool.get("server_label"), str):
        raise missing_parameter(f"tools[{n}].server_label")
    if not isinstance(tool.get("server_url"), str) and not isinstance(
        tool.get("connector_id"), str
    ):
        raise missing_parameter(f"tools[{n}].server_url")
    approval = tool.get("require_approval")
    if approval is not None and approval not in ("always", "never") and _dict(approval) is None:
        raise invalid_type(
            f"tools[{n}].require_approval", "'always', 'never' or an object", approval
        )


def _check_item(raw: object, n: int) -> None:
    item = _dict(raw)
    path = f"input[{n}]"
    if item is None:
        raise invalid_type(path, "an object", raw)
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None:
        raise missing_parameter(f"{path}.type")
    if kind == "message":
        if item.get("role") not in _MESSAGE_ROLES:
            raise invalid_request(
                f"Invalid value: '{item.get('role')}'. Supported values are: 'user', "
                "'assistant', 'system', and 'developer'.",
                param=f"{path}.role",
                code="invalid_value",
            )
        if "content" not in item:
            raise missing_parameter(f"{path}.content")
        content = item["content"]
        if isinstance(content, list) and not content:
            raise empty_array(f"{path}.content")
    elif kind == "function_call":
        for name in ("call_id", "name", "arguments"):
            if name not in item:
                raise missing_parameter(f"{path}.{name}")
            if not isinstance(item[name], str):
                raise invalid_type(f"{path}.{name}", "a string", item[name])
    elif kind == "function_call_output":
        for name in ("call_id", "output"):
            if name not in item:
                raise missing_parameter(f"{path}.{name}")
        if not isinstance(item["call_id"], str):
            raise invalid_type(f"{path}.call_id", "a string", item["call_id"])
    elif kind == "reasoning":
        if not isinstance(item.get("id"), str):
            raise missing_parameter(f"{path}.id")
        if _list(item.get("summary")) is None:
            raise missing_parameter(f"{path}.summary")
    elif kind == "item_reference" and not isinstance(item.get("id"), str):
        raise missing_parameter(f"{path}.id")


def _check_reasoning(
    item: Mapping[str, Any],
    stored_item: Callable[[str], dict[str, Any] | None],
    issued_item: Callable[[str], str | None],
) -> None:
    item_id = str(item["id"])
    encrypted = item.get("encrypted_content")
    if encrypted is not None:
        if issued_item(str(encrypted)) != item_id:
            raise invalid_request(
                UNVERIFIED_ENCRYPTED_CONTENT.format(id=item_id),
                param="input",
                code="invalid_encrypted_content",
            )
        return
    if stored_item(item_id) is None:
        raise invalid_request(ITEM_NOT_PERSISTED.format(id=item_id), param="input")


def _check_pairing(items: Sequence[Mapping[str, Any]]) -> None:
    calls = [str(i["call_id"]) for i in items if i.get("type") == "function_call"]
    outputs = [str(i["call_id"]) for i in items if i.get("type") == "function_call_output"]
    for call_id in outputs:
        if call_id not in calls:
            raise invalid_request(NO_TOOL_CALL.format(call_id=call_id), param="input")
    for call_id in calls:
        if call_id not in outputs:
            raise invalid_request(NO_TOOL_OUTPUT.format(call_id=call_id), param="input")


# -- rendering ----------------------------------------------------------------------------


def render_response(
    *,
    request: ResponsesRequest,
    response_id: str,
    created: int,
    output: Sequence[Mapping[str, Any]],
    status: str,
    incomplete_reason: str | None,
    error: Mapping[str, Any] | None,
    usage: Usage | None,
) -> dict[str, Any]:
    """The ``response`` object, echoing the request's settings."""
    body = request.body
    reasoning = _dict(body.get("reasoning")) or {}
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": bool(body.get("background", False)),
        "completed_at": created if status == "completed" else None,
        "error": dict(error) if error is not None else None,
        "incomplete_details": (
            {"reason": incomplete_reason} if incomplete_reason is not None else None
        ),
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "model": request.model,
        "output": [dict(item) for item in output],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": body.get("prompt_cache_retention"),
        "reasoning": {
            "effort": reasoning.get("effort"),
            "summary": reasoning.get("summary"),
        },
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": body.get("service_tier") or "default",
        "store": request.store,
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": list(request.tools),
        "top_logprobs": body.get("top_logprobs", 0),
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage.responses() if usage is not None else None,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


class _Events:
    """Collects Responses stream frames with consecutive ``sequence_number`` values."""

    def __init__(self, issuer: Issuer, obfuscate: bool) -> None:
        self.frames: list[Frame] = []
        self._issuer = issuer
        self._obfuscate = obfuscate

    def add(self, kind: str, fields: Mapping[str, Any], *, final: bool = False) -> None:
        data: dict[str, Any] = {"type": kind, **fields, "sequence_number": len(self.frames)}
        self.frames.append(Frame(data, event=kind, final=final))

    def delta(self, kind: str, fields: Mapping[str, Any], piece: str) -> None:
        data: dict[str, Any] = {**fields, "delta": piece}
        if kind == "response.output_text.delta":
            data["logprobs"] = []
        if self._obfuscate:
            data["obfuscation"] = self._issuer.obfuscation()
        self.add(kind, data)


def _stream_message(events: _Events, index: int, item: Mapping[str, Any]) -> None:
    started: dict[str, Any] = {**item, "status": "in_progress", "content": []}
    events.add("response.output_item.added", {"output_index": index, "item": started})
    for c, raw in enumerate(cast(list[Any], item["content"])):
        part = cast(dict[str, Any], raw)
        at = {"item_id": item["id"], "output_index": index, "content_index": c}
        if part["type"] == "output_text":
            events.add("response.content_part.added", {**at, "part": {**part, "text": ""}})
            for piece in chunks(str(part["text"])):
                events.delta("response.output_text.delta", at, piece)
            events.add("response.output_text.done", {**at, "text": part["text"], "logprobs": []})
        elif part["type"] == "refusal":
            events.add("response.content_part.added", {**at, "part": {**part, "refusal": ""}})
            for piece in chunks(str(part["refusal"])):
                events.delta("response.refusal.delta", at, piece)
            events.add("response.refusal.done", {**at, "refusal": part["refusal"]})
        else:
            events.add("response.content_part.added", {**at, "part": part})
        events.add("response.content_part.done", {**at, "part": part})
    events.add("response.output_item.done", {"output_index": index, "item": dict(item)})


def _stream_function_call(events: _Events, index: int, item: Mapping[str, Any]) -> None:
    started: dict[str, Any] = {**item, "arguments": "", "status": "in_progress"}
    events.add("response.output_item.added", {"output_index": index, "item": started})
    at = {"item_id": item["id"], "output_index": index}
    arguments = str(item["arguments"])
    if arguments:
        for piece in chunks(arguments):
            events.delta("response.function_call_arguments.delta", at, piece)
    events.add(
        "response.function_call_arguments.done",
        {**at, "name": item["name"], "arguments": arguments},
    )
    events.add("response.output_item.done", {"output_index": index, "item": dict(item)})


def _stream_reasoning(events: _Events, index: int, item: Mapping[str, Any]) -> None:
    started: dict[str, Any] = {"id": item["id"], "type": "reasoning", "summary": []}
    events.add("response.output_item.added", {"output_index": index, "item": started})
    at = {"item_id": item["id"], "output_index": index}
    for s, raw in enumerate(cast(list[Any], item.get("summary") or [])):
        part = cast(dict[str, Any], raw)
        here = {**at, "summary_index": s}
        events.add("response.reasoning_summary_part.added", {**here, "part": {**part, "text": ""}})
        for piece in chunks(str(part["text"])):
            events.delta("response.reasoning_summary_text.delta", here, piece)
        events.add("response.reasoning_summary_text.done", {**here, "text": part["text"]})
        events.add("response.reasoning_summary_part.done", {**here, "part": part})
    for c, raw in enumerate(cast(list[Any], item.get("content") or [])):
        part = cast(dict[str, Any], raw)
        here = {**at, "content_index": c}
        for piece in chunks(str(part["text"])):
            events.delta("response.reasoning_text.delta", here, piece)
        events.add("response.reasoning_text.done", {**here, "text": part["text"]})
    events.add("response.output_item.done", {"output_index": index, "item": dict(item)})


_TERMINAL = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}


def response_events(
    response: Mapping[str, Any], *, request: ResponsesRequest, issuer: Issuer
) -> list[Frame]:
    """The SSE frames streaming ``response`` (as :func:`render_response` built it)."""
    events = _Events(issuer, request.include_obfuscation)
    snapshot: dict[str, Any] = {
        **response,
        "status": "in_progress",
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
        "output": [],
        "usage": None,
    }
    events.add("response.created", {"response": snapshot})
    events.add("response.in_progress", {"response": snapshot})
    for index, raw in enumerate(cast(list[Any], response["output"])):
        item = cast(dict[str, Any], raw)
        kind = item.get("type")
        if kind == "message":
            _stream_message(events, index, item)
        elif kind == "function_call":
            _stream_function_call(events, index, item)
        elif kind == "reasoning":
            _stream_reasoning(events, index, item)
        else:
            events.add("response.output_item.added", {"output_index": index, "item": item})
            events.add("response.output_item.done", {"output_index": index, "item": item})
    terminal = _TERMINAL.get(str(response["status"]), "response.completed")
    events.add(terminal, {"response": dict(response)}, final=True)
    return events.frames


def build_output(
    reply: SimReply, *, request: ResponsesRequest, issuer: Issuer, status: str
) -> list[dict[str, Any]]:
    """The output items of ``reply``: reasoning, one message, function calls.

    Ids are filled in and encrypted contents issued when the request includes them; an
    incomplete response marks its last message or call ``incomplete``.
    """
    output: list[dict[str, Any]] = []
    for scripted in reply.reasoning:
        item_id = scripted.id or issuer.reasoning_id()
        item: dict[str, Any] = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": s} for s in scripted.summary],
        }
        if scripted.content:
            item["content"] = [{"type": "reasoning_text", "text": t} for t in scripted.content]
        if request.include_encrypted:
            if scripted.encrypted_content is not None:
                issuer.remember(scripted.encrypted_content, item_id)
                item["encrypted_content"] = scripted.encrypted_content
            else:
                item["encrypted_content"] = issuer.encrypt(item_id, "\n".join(scripted.summary))
        output.append(item)
    parts: list[dict[str, Any]] = []
    if reply.text is not None:
        parts.append({"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []})
    if reply.refusal is not None:
        parts.append({"type": "refusal", "refusal": reply.refusal})
    if parts:
        output.append(
            {
                "id": issuer.message_id(),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": parts,
            }
        )
    for scripted_call in reply.tool_calls:
        output.append(
            {
                "id": scripted_call.id or issuer.function_call_id(),
                "type": "function_call",
                "status": "completed",
                "call_id": scripted_call.call_id or issuer.call_id(),
                "name": scripted_call.name,
                "arguments": scripted_call.arguments_json(),
            }
        )
    if status == "incomplete":
        for item in reversed(output):
            if item["type"] in ("message", "function_call"):
                item["status"] = "incomplete"
                break
    return output
