"""Request parsing: the JSON body → :class:`ParsedRequest`, with the API's schema errors.

Parsing checks shapes only (required fields, types, enumerations, tool-name pattern,
``cache_control`` values and where markers are allowed, message text blocks that are empty or
only whitespace); the conversation rules (tool
pairing, thinking rules, breakpoint limits) live in ``_validate`` and ``_cache``.

Every block keeps the path the API would name in an error (``tools.0``, ``system.1``,
``messages.2.content.0``). A string ``content`` or ``system`` becomes one text block.
Consecutive messages with the same role are merged into one :class:`Turn` (the current
API's behaviour); the strict-roles option turns that into an error instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from dive.testing.anthropic._errors import APIErrorAnswer, invalid_request
from dive.testing.anthropic._models import accepts_system_role

__all__ = [
    "Block",
    "ParsedRequest",
    "Turn",
    "as_dict",
    "as_list",
    "check_cache_control",
    "error_for_body",
    "parse_request",
]

Tier = Literal["tools", "system", "messages"]

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_THINKING_TYPES = ("enabled", "adaptive", "disabled")
_TOOL_CHOICE_TYPES = ("auto", "any", "tool", "none")
_NO_CACHE_CONTROL = ("thinking", "redacted_thinking")
_REQUIRED_FIELDS: Mapping[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "tool_use": (("id", str), ("name", str), ("input", dict)),
    "server_tool_use": (("id", str), ("name", str)),
    "tool_result": (("tool_use_id", str),),
    "thinking": (("thinking", str), ("signature", str)),
    "redacted_thinking": (("data", str),),
    "image": (("source", dict),),
    "document": (("source", dict),),
}
EMPTY_TEXT = "messages: text content blocks must be non-empty"
WHITESPACE_TEXT = "messages: text content blocks must contain non-whitespace text"
_TYPE_NAMES: Mapping[type, str] = {
    str: "a valid string",
    dict: "a valid dictionary",
    list: "a valid list",
}


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object, or None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def as_list(value: object) -> list[Any] | None:
    """``value`` as a JSON array, or None."""
    return cast(list[Any], value) if isinstance(value, list) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One block of the prompt in prefix order.

    Attributes:
        tier: ``tools``, ``system`` or ``messages``.
        path: the position the API names in errors (``messages.2.content.0``).
        data: the block's JSON.
        index: position inside its container (tool, system or content index).
        message_index: the index in ``messages`` (message blocks only).
    """

    tier: Tier
    path: str
    data: Mapping[str, Any]
    index: int
    message_index: int | None = None

    @property
    def type(self) -> str:
        return str(self.data.get("type", ""))

    @property
    def cache_control(self) -> Mapping[str, Any] | None:
        return as_dict(self.data.get("cache_control"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """Consecutive messages of one role, merged."""

    role: str
    blocks: tuple[Block, ...]
    message_indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedRequest:
    """A request body whose shape has been checked."""

    body: Mapping[str, Any]
    model: str
    max_tokens: int | None
    stream: bool
    tools: tuple[Block, ...]
    system: tuple[Block, ...]
    turns: tuple[Turn, ...]
    thinking: Mapping[str, Any] | None
    tool_choice: Mapping[str, Any] | None
    temperature: float | None
    betas: frozenset[str]

    @property
    def thinking_type(self) -> str:
        """``enabled``, ``adaptive`` or ``disabled`` (the default)."""
        return str(self.thinking["type"]) if self.thinking else "disabled"

    @property
    def thinking_on(self) -> bool:
        return self.thinking_type in ("enabled", "adaptive")

    @property
    def forced_tool_choice(self) -> bool:
        return self.tool_choice is not None and self.tool_choice.get("type") in ("any", "tool")

    @property
    def blocks(self) -> tuple[Block, ...]:
        """Every block in prefix order: tools → system → messages."""
        return (*self.tools, *self.system, *(b for turn in self.turns for b in turn.blocks))


def parse_request(
    body: object, *, count_only: bool, betas: frozenset[str] = frozenset()
) -> ParsedRequest:
    """Check the body's shape and parse it; raise :class:`APIErrorAnswer` (400) when invalid."""
    data = as_dict(body)
    if data is None:
        raise invalid_request("Request body must be a JSON object.")
    required = ("model", "messages") if count_only else ("model", "max_tokens", "messages")
    for name in required:
        if name not in data:
            raise invalid_request(f"{name}: Field required")
    model = data["model"]
    if not isinstance(model, str) or not model:
        raise invalid_request("model: Input should be a valid string")
    max_tokens = None if count_only else _max_tokens(data["max_tokens"])
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise invalid_request("stream: Input should be a valid boolean")
    check_cache_control(data.get("cache_control"), "cache_control")
    return ParsedRequest(
        body=data,
        model=model,
        max_tokens=max_tokens,
        stream=stream,
        tools=_tools(data.get("tools")),
        system=_system(data.get("system")),
        turns=_turns(data["messages"], model),
        thinking=_thinking(data.get("thinking")),
        tool_choice=_tool_choice(data.get("tool_choice")),
        temperature=_temperature(data.get("temperature")),
        betas=betas,
    )


def _max_tokens(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise invalid_request("max_tokens: Input should be a valid integer")
    if value < 0:
        raise invalid_request("max_tokens: Input should be greater than or equal to 0")
    return value


def _temperature(value: object) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise invalid_request("temperature: Input should be a valid number")
    if value < 0:
        raise invalid_request("temperature: Input should be greater than or equal to 0")
    if value > 1:
        raise invalid_request("temperature: Input should be less than or equal to 1")
    return float(value)


def _thinking(value: object) -> Mapping[str, Any] | None:
    if value is None:
        return None
    thinking = as_dict(value)
    if thinking is None:
        raise invalid_request("thinking: Input should be a valid dictionary")
    kind = thinking.get("type")
    if kind not in _THINKING_TYPES:
        raise invalid_request(
            f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected "
            "tags: 'enabled', 'adaptive', 'disabled'"
        )
    if kind == "enabled":
        if "budget_tokens" not in thinking:
            raise invalid_request("thinking.enabled.budget_tokens: Field required")
        budget = thinking["budget_tokens"]
        if not isinstance(budget, int) or isinstance(budget, bool):
            raise invalid_request("thinking.enabled.budget_tokens: Input should be a valid integer")
        if budget < 1024:
            raise invalid_request(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
    if "display" in thinking:
        if kind == "disabled":
            raise invalid_request("thinking.disabled.display: Extra inputs are not permitted")
        if thinking["display"] not in ("summarized", "omitted"):
            raise invalid_request(
                f"thinking.{kind}.display: Input should be 'summarized' or 'omitted'"
            )
    return thinking


def _tool_choice(value: object) -> Mapping[str, Any] | None:
    if value is None:
        return None
    choice = as_dict(value)
    if choice is None:
        raise invalid_request("tool_choice: Input should be a valid dictionary")
    kind = choice.get("type")
    if kind not in _TOOL_CHOICE_TYPES:
        raise invalid_request(
            f"tool_choice: Input tag '{kind}' found using 'type' does not match any of the "
            "expected tags: 'auto', 'any', 'tool', 'none'"
        )
    if kind == "tool" and not isinstance(choice.get("name"), str):
        raise invalid_request("tool_choice.tool.name: Field required")
    return choice


def _tools(value: object) -> tuple[Block, ...]:
    if value is None:
        return ()
    items = as_list(value)
    if items is None:
        raise invalid_request("tools: Input should be a valid list")
    blocks: list[Block] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        tool = as_dict(item)
        path = f"tools.{i}"
        if tool is None:
            raise invalid_request(f"{path}: Input should be a valid dictionary")
        kind = tool.get("type", "custom")
        name = tool.get("name")
        if kind in (None, "custom"):
            if not isinstance(name, str) or not _TOOL_NAME.match(name):
                raise invalid_request(
                    f"{path}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
                )
            if as_dict(tool.get("input_schema")) is None:
                raise invalid_request(f"{path}.custom.input_schema: Field required")
        elif kind == "mcp_toolset":  # names its MCP server instead (checked in ``_mcp``)
            _check_cache_control(tool, path)
            blocks.append(Block(tier="tools", path=path, data=tool, index=i))
            continue
        elif not isinstance(name, str):
            raise invalid_request(f"{path}.{kind}.name: Field required")
        if name in names:
            raise invalid_request("tools: Tool names must be unique.")
        names.add(str(name))
        _check_cache_control(tool, path)
        blocks.append(Block(tier="tools", path=path, data=tool, index=i))
    return tuple(blocks)


def _system(value: object) -> tuple[Block, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        if not value:
            return ()
        return (
            Block(tier="system", path="system.0", data={"type": "text", "text": value}, index=0),
        )
    items = as_list(value)
    if items is None:
        raise invalid_request("system: Input should be a valid string or a valid list")
    blocks: list[Block] = []
    for i, item in enumerate(items):
        block = as_dict(item)
        path = f"system.{i}"
        if block is None or block.get("type") != "text":
            raise invalid_request(f"{path}.type: Input should be 'text'")
        if not isinstance(block.get("text"), str):
            raise invalid_request(f"{path}.text: Field required")
        _check_cache_control(block, path)
        blocks.append(Block(tier="system", path=path, data=block, index=i))
    return tuple(blocks)


def _turns(value: object, model: str) -> tuple[Turn, ...]:
    messages = as_list(value)
    if messages is None:
        raise invalid_request("messages: Input should be a valid list")
    if not messages:
        raise invalid_request("messages: at least one message is required")
    turns: list[Turn] = []
    for n, item in enumerate(messages):
        role, blocks = _message(item, n, model)
        if turns and turns[-1].role == role:
            last = turns[-1]
            turns[-1] = Turn(
                role=role,
                blocks=(*last.blocks, *blocks),
                message_indexes=(*last.message_indexes, n),
            )
        else:
            turns.append(Turn(role=role, blocks=blocks, message_indexes=(n,)))
    return tuple(turns)


def _message(item: object, n: int, model: str) -> tuple[str, tuple[Block, ...]]:
    message = as_dict(item)
    if message is None:
        raise invalid_request(f"messages.{n}: Input should be a valid dictionary")
    if "role" not in message:
        raise invalid_request(f"messages.{n}.role: Field required")
    role = message["role"]
    if role == "system" and not accepts_system_role(model):
        raise invalid_request("role 'system' is not supported on this model")
    if role not in ("user", "assistant", "system"):
        raise invalid_request(f"messages.{n}.role: Input should be 'user' or 'assistant'")
    if "content" not in message:
        raise invalid_request(f"messages.{n}.content: Field required")
    content = message["content"]
    if isinstance(content, str):
        text = {"type": "text", "text": content}
        _check_text(text)
        path = f"messages.{n}.content.0"
        return role, (Block(tier="messages", path=path, data=text, index=0, message_index=n),)
    items = as_list(content)
    if items is None:
        raise invalid_request(f"messages.{n}.content: Input should be a valid string or list")
    blocks: list[Block] = []
    for m, raw in enumerate(items):
        path = f"messages.{n}.content.{m}"
        block = _content_block(raw, path)
        blocks.append(Block(tier="messages", path=path, data=block, index=m, message_index=n))
    return role, tuple(blocks)


def _content_block(raw: object, path: str) -> dict[str, Any]:
    block = as_dict(raw)
    if block is None:
        raise invalid_request(f"{path}: Input should be a valid dictionary")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise invalid_request(f"{path}.type: Field required")
    for name, expected in _REQUIRED_FIELDS.get(kind, ()):
        if name not in block:
            raise invalid_request(f"{path}.{kind}.{name}: Field required")
        if not isinstance(block[name], expected):
            raise invalid_request(f"{path}.{kind}.{name}: Input should be {_TYPE_NAMES[expected]}")
    if kind == "text":
        _check_text(block)
    if kind in _NO_CACHE_CONTROL:
        if "cache_control" in block:
            raise invalid_request(f"{path}.{kind}.cache_control: Extra inputs are not permitted")
    else:
        _check_cache_control(block, path)
    if kind == "tool_result":
        for i, inner in enumerate(as_list(block.get("content")) or []):
            inner_block = as_dict(inner)
            if inner_block is not None:
                _check_cache_control(inner_block, f"{path}.content.{i}")
    return block


def _check_text(block: Mapping[str, Any]) -> None:
    """A message text block must hold something other than whitespace (the API's 400s)."""
    text = str(block["text"])
    if not text:
        raise invalid_request(EMPTY_TEXT)
    if not text.strip():
        raise invalid_request(WHITESPACE_TEXT)


def _check_cache_control(block: Mapping[str, Any], path: str) -> None:
    check_cache_control(block.get("cache_control"), f"{path}.cache_control")


def check_cache_control(value: object, path: str) -> None:
    """Check one ``cache_control`` value (None is fine)."""
    if value is None:
        return
    marker = as_dict(value)
    if marker is None:
        raise invalid_request(f"{path}: Input should be a valid dictionary")
    if marker.get("type") != "ephemeral":
        raise invalid_request(f"{path}.type: Input should be 'ephemeral'")
    if marker.get("ttl", "5m") not in ("5m", "1h"):
        raise invalid_request(f"{path}.ttl: Input should be '5m' or '1h'")


def error_for_body(exc: ValueError) -> APIErrorAnswer:
    """The answer to a body that is not JSON."""
    return invalid_request(f"There was an error parsing the body of your request: {exc}")
