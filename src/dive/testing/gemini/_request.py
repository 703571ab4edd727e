r"""Routes and request parsing: the path and JSON body → :class:`Route` and :class:`ParsedRequest`.

Routes are ``POST /{version}/{model}:generateContent`` and ``:streamGenerateContent`` with
``version`` one of ``v1beta``, ``v1`` (the ``google-genai`` 3.x default) and ``v1alpha``, and
``model`` ``models/<id>`` or ``tunedModels/<id>``. ``?alt=sse`` selects SSE streaming.

Parsing checks shapes only, with the messages the API uses for them (the field-violation
style ``* GenerateContentRequest.contents: contents is not specified\n``): contents present
and non-empty, roles ``user`` / ``model`` (absent means ``user``), non-empty ``parts``, one
data field per part, names on calls, responses and declarations, a media type and data on
inline data and a URI on file data (also in the parts of a function response; sim wording).
Part keys may also be snake_case (proto JSON accepts both spellings; the SDK itself sends some
nested objects, such as ``thinkingConfig``, in snake_case); parsed parts use camelCase. The
conversation rules live in ``_validate``, the options checked against the model in ``_config``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs

from dive.testing.gemini._errors import APIErrorAnswer, invalid_argument

__all__ = [
    "Content",
    "ParsedRequest",
    "Route",
    "as_dict",
    "as_list",
    "error_for_body",
    "match_route",
    "parse_request",
]

_ROUTE = re.compile(
    r"^/(?P<version>v1beta|v1|v1alpha)/(?P<model>(?:models|tunedModels)/[^/:]+)"
    r":(?P<method>generateContent|streamGenerateContent)$"
)
DATA_FIELDS = (
    "text",
    "inlineData",
    "functionCall",
    "functionResponse",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
ROLES = ("user", "model")
_CAMEL_PART_KEYS = {
    "inline_data": "inlineData",
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "file_data": "fileData",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
    "tool_call": "toolCall",
    "tool_response": "toolResponse",
    "thought_signature": "thoughtSignature",
}


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any] | None:
    """``value`` as a JSON array, or None."""
    return cast(list[Any], value) if isinstance(value, list) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """A ``generateContent`` route.

    Attributes:
        api_version: ``v1beta``, ``v1`` or ``v1alpha``.
        model_path: ``models/<id>`` (or ``tunedModels/<id>``).
        method: ``generateContent`` or ``streamGenerateContent``.
        sse: whether ``alt=sse`` was asked for.
    """

    api_version: str
    model_path: str
    method: str
    sse: bool

    @property
    def model(self) -> str:
        """The model id without the ``models/`` prefix."""
        return self.model_path.split("/", 1)[1]

    @property
    def stream(self) -> bool:
        return self.method == "streamGenerateContent"


def match_route(path: str) -> Route | None:
    """The route of a request path (with its query string), or None."""
    route, _, query = path.partition("?")
    found = _ROUTE.match(route)
    if found is None:
        return None
    alt = parse_qs(query).get("alt", [""])[-1]
    return Route(
        api_version=found["version"],
        model_path=found["model"],
        method=found["method"],
        sse=alt == "sse",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Content:
    """One entry of ``contents``.

    Attributes:
        index: its position in ``contents``.
        role: ``user`` or ``model`` (an absent role is ``user``).
        parts: its parts, as sent.
    """

    index: int
    role: str
    parts: tuple[Mapping[str, Any], ...]

    def calls(self) -> list[tuple[int, Mapping[str, Any]]]:
        """``(part index, functionCall)`` of each call part."""
        return [(j, p["functionCall"]) for j, p in enumerate(self.parts) if "functionCall" in p]

    def responses(self) -> list[tuple[int, Mapping[str, Any]]]:
        """``(part index, functionResponse)`` of each function response part."""
        return [
            (j, p["functionResponse"]) for j, p in enumerate(self.parts) if "functionResponse" in p
        ]

    @property
    def is_plain_user_turn(self) -> bool:
        """A user content with something other than function responses (a new user turn)."""
        return self.role == "user" and any("functionResponse" not in p for p in self.parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedRequest:
    """A request body whose shape has been checked."""

    body: Mapping[str, Any]
    contents: tuple[Content, ...]


def _violation(path: str, message: str) -> APIErrorAnswer:
    return invalid_argument(f"* GenerateContentRequest.{path}: {message}\n")


def parse_request(body: object) -> ParsedRequest:
    """Check the body's shape and parse it; raise :class:`APIErrorAnswer` (400) when invalid."""
    data = as_dict(body)
    if data is None:
        raise invalid_argument("Invalid JSON payload received. Root element must be a message.")
    raw_contents = data.get("contents")
    if raw_contents is None or raw_contents == []:
        raise _violation("contents", "contents is not specified")
    items = as_list(raw_contents)
    if items is None:
        raise invalid_argument(
            "Invalid JSON payload received. Expected a list of Content at 'contents'."
        )
    contents = tuple(_content(item, i) for i, item in enumerate(items))
    system = data.get("systemInstruction")
    if system is not None:
        system_content = as_dict(system)
        if system_content is None:
            raise invalid_argument(
                "Invalid JSON payload received. Expected a Content at 'systemInstruction'."
            )
        _parts(system_content.get("parts"), "system_instruction")
    _tools(data.get("tools"))
    return ParsedRequest(body=data, contents=contents)


def _content(item: object, i: int) -> Content:
    content = as_dict(item)
    if content is None:
        raise invalid_argument(
            f"Invalid JSON payload received. Expected a Content at contents[{i}]."
        )
    role = content.get("role") or "user"
    if role not in ROLES:
        raise invalid_argument("Please use a valid role: user, model.")
    parts = _parts(content.get("parts"), f"contents[{i}]")
    return Content(index=i, role=str(role), parts=parts)


def _parts(value: object, path: str) -> tuple[Mapping[str, Any], ...]:
    items = as_list(value)
    if not items:
        raise _violation(f"{path}.parts", "contents.parts must not be empty.")
    parts: list[Mapping[str, Any]] = []
    for j, item in enumerate(items):
        raw = as_dict(item)
        where = f"{path}.parts[{j}]"
        if raw is None:
            raise invalid_argument(f"Invalid JSON payload received. Expected a Part at {where}.")
        # Proto JSON also accepts the original snake_case field names.
        part = {_CAMEL_PART_KEYS.get(k, k): v for k, v in raw.items()}
        if not any(part.get(name) is not None for name in DATA_FIELDS):
            raise _violation(
                f"{where}.data", "required oneof field 'data' must have one initialized field"
            )
        _check_media(part, where)
        for key, field_path in (
            ("functionCall", "function_call"),
            ("functionResponse", "function_response"),
        ):
            if key not in part:
                continue
            inner = as_dict(part[key])
            if inner is None:
                raise invalid_argument(
                    f"Invalid JSON payload received. Expected an object at {where}.{key}."
                )
            if not isinstance(inner.get("name"), str) or not inner["name"]:
                raise _violation(f"{where}.{field_path}.name", "Name cannot be empty.")
            payload = "args" if key == "functionCall" else "response"
            if inner.get(payload) is not None and as_dict(inner[payload]) is None:
                raise invalid_argument(
                    f"Invalid JSON payload received. Expected an object at {where}.{key}.{payload}."
                )
        parts.append(part)
    return tuple(parts)


def _blob_fields(blob: Mapping[str, Any], where: str, names: tuple[str, ...]) -> None:
    for camel in names:
        snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
        value = blob.get(camel, blob.get(snake))
        if not isinstance(value, str) or not value:
            raise _violation(f"{where}.{snake}", "Required field is missing or empty.")


def _check_media(part: Mapping[str, Any], where: str) -> None:
    """``inlineData`` needs ``mimeType`` and ``data``; ``fileData`` needs ``fileUri`` (sim).

    The parts of a ``functionResponse`` each hold ``inlineData`` or ``fileData``.
    """
    for key, path, names in (
        ("inlineData", "inline_data", ("mimeType", "data")),
        ("fileData", "file_data", ("fileUri",)),
    ):
        blob = as_dict(part.get(key))
        if key in part and blob is None:
            raise invalid_argument(
                f"Invalid JSON payload received. Expected an object at {where}.{key}."
            )
        if blob is not None:
            _blob_fields(blob, f"{where}.{path}", names)
    response = as_dict(part.get("functionResponse"))
    if response is None or response.get("parts") is None:
        return
    for k, raw in enumerate(as_list(response["parts"]) or [None]):
        inner = as_dict(raw) or {}
        inner_where = f"{where}.function_response.parts[{k}]"
        blob = as_dict(inner.get("inlineData", inner.get("inline_data")))
        file_data = as_dict(inner.get("fileData", inner.get("file_data")))
        if blob is not None:
            _blob_fields(blob, f"{inner_where}.inline_data", ("mimeType", "data"))
        elif file_data is not None:
            _blob_fields(file_data, f"{inner_where}.file_data", ("fileUri",))
        else:
            raise _violation(
                f"{inner_where}.data", "required oneof field 'data' must have one initialized field"
            )


def _tools(value: object) -> None:
    if value is None:
        return
    tools = as_list(value)
    if tools is None:
        raise invalid_argument("Invalid JSON payload received. Expected a list at 'tools'.")
    for i, raw in enumerate(tools):
        tool = as_dict(raw)
        if tool is None:
            raise invalid_argument(f"Invalid JSON payload received. Expected a Tool at tools[{i}].")
        declarations = tool.get("functionDeclarations")
        if declarations is None:
            continue
        for j, raw_declaration in enumerate(as_list(declarations) or []):
            declaration = as_dict(raw_declaration) or {}
            name = declaration.get("name")
            if not isinstance(name, str) or not name:
                raise _violation(
                    f"tools[{i}].function_declarations[{j}].name", "Name cannot be empty."
                )


def error_for_body(exc: ValueError) -> APIErrorAnswer:
    """The answer to a body that is not JSON."""
    return invalid_argument(f"Invalid JSON payload received. {exc}")
