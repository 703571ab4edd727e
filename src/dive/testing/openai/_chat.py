"""Chat Completions: request validation (wire-apis.md B1, B4) and rendering (B2, B3).

Validation runs in this order, the first failure wins (sim choice):

1. shape: ``model``; ``messages`` present, a non-empty list of objects with a known role;
   assistant ``content`` present unless it has ``tool_calls``; each tool call with an ``id``,
   a ``function.name`` and string ``arguments``; tool messages with a ``tool_call_id``;
   ``tools`` non-empty when given;
2. ``stream_options`` without ``stream``;
3. ``parallel_tool_calls`` without ``tools``;
4. ``max_tokens`` on a reasoning model (``unsupported_parameter``);
5. tool pairing: every assistant ``tool_calls`` id answered by the tool messages right after
   it, and every tool message inside such a run answering one of them.

For the unanswered-call error ``param`` names the first message after the tool messages
(the one that should have been a tool message), or the assistant message when the
conversation ends there (sim choice).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.testing.openai._errors import invalid_request
from dive.testing.openai._render import Frame, Issuer, Usage, chunks

__all__ = [
    "ChatRequest",
    "ResolvedCall",
    "completion_chunks",
    "is_reasoning_model",
    "render_completion",
    "validate_chat",
]

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
_ROLES = ("system", "assistant", "user", "function", "tool", "developer")

MISSING_TOOL_RESPONSES = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
ORPHAN_TOOL_MESSAGE = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
UNKNOWN_TOOL_CALL_ID = (
    "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
)
MAX_TOKENS_UNSUPPORTED = (
    "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead."
)
STREAM_OPTIONS_WITHOUT_STREAM = (
    "The 'stream_options' parameter is only allowed when 'stream' is enabled."
)
PARALLEL_WITHOUT_TOOLS = (
    "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when "
    "'tools' are specified."
)
_EMPTY_ARRAY = (
    "Invalid '{name}': empty array. Expected an array with minimum length 1, but got an empty "
    "array instead."
)


def is_reasoning_model(model: str) -> bool:
    """Whether ``model`` is a reasoning model (``o1``, ``o3-mini``, ``o4-mini``, ``gpt-5*``).

    Args:
        model: the model name of a request.
    """
    return bool(_REASONING_MODEL.match(model))


def _dict(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _list(value: object) -> list[Any] | None:
    return cast(list[Any], value) if isinstance(value, list) else None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return "a string"


def missing_parameter(name: str) -> Exception:
    return invalid_request(
        f"Missing required parameter: '{name}'.", param=name, code="missing_required_parameter"
    )


def invalid_type(name: str, expected: str, value: object) -> Exception:
    return invalid_request(
        f"Invalid type for '{name}': expected {expected}, but got {_json_type(value)} instead.",
        param=name,
        code="invalid_type",
    )


def empty_array(name: str) -> Exception:
    return invalid_request(_EMPTY_ARRAY.format(name=name), param=name, code="empty_array")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """A validated Chat Completions body."""

    body: Mapping[str, Any]
    model: str
    stream: bool
    include_usage: bool
    include_obfuscation: bool


def validate_chat(
    body: Mapping[str, Any], *, reasoning_model: Callable[[str], bool]
) -> ChatRequest:
    """Raise a 400 answer on the first broken rule; the checked request otherwise."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("you must provide a model parameter")
    if "messages" not in body:
        raise missing_parameter("messages")
    messages = _list(body["messages"])
    if messages is None:
        raise invalid_type("messages", "an array", body["messages"])
    if not messages:
        raise empty_array("messages")
    for n, raw in enumerate(messages):
        _check_message(raw, n)
    tools = body.get("tools")
    if tools is not None:
        tool_list = _list(tools)
        if tool_list is None:
            raise invalid_type("tools", "an array", tools)
        if not tool_list:
            raise empty_array("tools")
    stream = bool(body.get("stream"))
    if body.get("stream_options") is not None and not stream:
        raise invalid_request(STREAM_OPTIONS_WITHOUT_STREAM, param="stream_options")
    if body.get("parallel_tool_calls") is not None and not tools:
        raise invalid_request(PARALLEL_WITHOUT_TOOLS, param="parallel_tool_calls")
    if body.get("max_tokens") is not None and reasoning_model(model):
        raise invalid_request(
            MAX_TOKENS_UNSUPPORTED, param="max_tokens", code="unsupported_parameter"
        )
    _check_pairing(messages)
    options = _dict(body.get("stream_options")) or {}
    return ChatRequest(
        body=body,
        model=model,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        include_obfuscation=options.get("include_obfuscation") is not False,
    )


def _check_message(raw: object, n: int) -> None:
    message = _dict(raw)
    if message is None:
        raise invalid_type(f"messages[{n}]", "an object", raw)
    if "role" not in message:
        raise missing_parameter(f"messages[{n}].role")
    role = message["role"]
    if role not in _ROLES:
        supported = ", ".join(f"'{r}'" for r in _ROLES[:-1]) + f", and '{_ROLES[-1]}'"
        raise invalid_request(
            f"Invalid value: '{role}'. Supported values are: {supported}.",
            param=f"messages[{n}].role",
            code="invalid_value",
        )
    calls = message.get("tool_calls")
    if role == "assistant":
        if message.get("content") is None and not calls:
            raise invalid_request(
                "Invalid value for 'content': expected a string, got null.",
                param=f"messages.[{n}].content",
            )
        if calls is not None:
            _check_tool_calls(calls, n)
    elif "content" not in message:
        raise missing_parameter(f"messages[{n}].content")
    if role == "tool" and not isinstance(message.get("tool_call_id"), str):
        raise invalid_request(
            "Missing parameter 'tool_call_id': messages with role 'tool' must have a "
            "'tool_call_id'.",
            param=f"messages.[{n}].tool_call_id",
        )


def _check_tool_calls(calls: object, n: int) -> None:
    items = _list(calls)
    name = f"messages[{n}].tool_calls"
    if items is None:
        raise invalid_type(name, "an array", calls)
    if not items:
        raise empty_array(name)
    for m, raw in enumerate(items):
        path = f"{name}[{m}]"
        call = _dict(raw)
        if call is None:
            raise invalid_type(path, "an object", raw)
        if not isinstance(call.get("id"), str):
            raise missing_parameter(f"{path}.id")
        function = _dict(call.get("function"))
        if function is None:
            raise missing_parameter(f"{path}.function")
        if not isinstance(function.get("name"), str):
            raise missing_parameter(f"{path}.function.name")
        if "arguments" not in function:
            raise missing_parameter(f"{path}.function.arguments")
        if not isinstance(function["arguments"], str):
            raise invalid_type(f"{path}.function.arguments", "a string", function["arguments"])


def _check_pairing(messages: Sequence[Any]) -> None:
    i = 0
    while i < len(messages):
        message = cast(dict[str, Any], messages[i])
        role = message["role"]
        calls = _list(message.get("tool_calls")) or []
        if role == "assistant" and calls:
            ids = [str(cast(dict[str, Any], c)["id"]) for c in calls]
            answered: set[str] = set()
            j = i + 1
            while j < len(messages) and cast(dict[str, Any], messages[j])["role"] == "tool":
                tool_call_id = str(cast(dict[str, Any], messages[j])["tool_call_id"])
                if tool_call_id not in ids:
                    raise invalid_request(
                        UNKNOWN_TOOL_CALL_ID.format(id=tool_call_id),
                        param=f"messages.[{j}].tool_call_id",
                    )
                answered.add(tool_call_id)
                j += 1
            missing = [c for c in ids if c not in answered]
            if missing:
                at = j if j < len(messages) else i
                raise invalid_request(
                    MISSING_TOOL_RESPONSES.format(ids=", ".join(missing)),
                    param=f"messages.[{at}].role",
                )
            i = j
            continue
        if role == "tool":
            raise invalid_request(ORPHAN_TOOL_MESSAGE, param=f"messages.[{i}].role")
        i += 1


# -- rendering ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedCall:
    """A tool call with its id and JSON arguments."""

    id: str
    name: str
    arguments: str

    def wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


def _service_tier(body: Mapping[str, Any]) -> str:
    tier = body.get("service_tier")
    return tier if tier in ("flex", "priority", "scale") else "default"


def render_completion(
    *,
    request: ChatRequest,
    completion_id: str,
    created: int,
    text: str | None,
    refusal: str | None,
    calls: Sequence[ResolvedCall],
    finish_reason: str,
    usage: Usage,
) -> dict[str, Any]:
    """The complete (non-streaming) ``chat.completion`` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text,
        "refusal": refusal,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [c.wire() for c in calls]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "system_fingerprint": "fp_sim0penai",
        "service_tier": _service_tier(request.body),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": usage.chat(),
    }


def completion_chunks(
    completion: Mapping[str, Any], *, request: ChatRequest, issuer: Issuer
) -> list[Frame]:
    """The data-only SSE frames streaming ``completion``, ending with ``data: [DONE]``.

    ``completion`` is what :func:`render_completion` built.
    """
    choice = cast(dict[str, Any], completion["choices"][0])
    message = cast(dict[str, Any], choice["message"])
    base = {k: completion[k] for k in ("id", "object", "created", "model")}
    base["object"] = "chat.completion.chunk"
    base["system_fingerprint"] = completion["system_fingerprint"]
    base["service_tier"] = completion["service_tier"]

    def chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            **base,
            "choices": [
                {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if request.include_usage:
            data["usage"] = None
        if request.include_obfuscation:
            data["obfuscation"] = issuer.obfuscation()
        return data

    text: str | None = message["content"]
    refusal: str | None = message["refusal"]
    calls = cast(list[dict[str, Any]], message.get("tool_calls") or [])
    deltas: list[dict[str, Any]] = []
    headers = [
        {
            "index": i,
            "id": c["id"],
            "type": "function",
            "function": {"name": c["function"]["name"], "arguments": ""},
        }
        for i, c in enumerate(calls)
    ]
    if text is None and refusal is not None:
        deltas.append({"role": "assistant", "content": None, "refusal": ""})
    elif text is None and calls:
        deltas.append(
            {"role": "assistant", "content": None, "tool_calls": [headers[0]], "refusal": None}
        )
    else:
        deltas.append({"role": "assistant", "content": "", "refusal": None})
    if text:
        deltas += [{"content": piece} for piece in chunks(text)]
    if refusal:
        deltas += [{"refusal": piece} for piece in chunks(refusal)]
    for i, call in enumerate(calls):
        if not (i == 0 and text is None and refusal is None):
            deltas.append({"tool_calls": [headers[i]]})
        arguments = str(call["function"]["arguments"])
        if arguments:
            deltas += [
                {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
                for piece in chunks(arguments)
            ]
    frames = [Frame(chunk(d)) for d in deltas]
    frames.append(Frame(chunk({}, choice["finish_reason"]), final=True))
    if request.include_usage:
        usage_chunk: dict[str, Any] = {**base, "choices": [], "usage": completion["usage"]}
        if request.include_obfuscation:
            usage_chunk["obfuscation"] = issuer.obfuscation()
        frames.append(Frame(usage_chunk, final=True))
    frames.append(Frame(None, final=True))
    return frames
