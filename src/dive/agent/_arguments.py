"""Checking and normalising what ``Agent(...)`` and ``run(...)`` are given.

Tools given as functions or ``Tool`` objects (with clear errors for a class or a bare tool),
the model, ``output_type`` (``None`` is ``str``, a list is a union) and the run's input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Union, cast

from dive.errors import InvalidRunError, UserError
from dive.llm import Model
from dive.messages import BLOCK_CLASSES, Message, TextBlock
from dive.tools import FunctionTool, Tool

__all__ = [
    "UserInput",
    "check_model",
    "input_messages",
    "normalise_output_type",
    "tool_list",
    "type_name",
]

UserInput = str | Message | Sequence[Message] | Sequence[Any]

_MODEL_MEMBERS = ("name", "provider", "supports_streaming", "stream", "generate")


def _as_tool(item: Tool | Callable[..., Any]) -> Tool:
    if isinstance(item, type):
        hint = f"{item.__name__}()" if issubclass(item, Tool) else "a function or a Tool"
        raise UserError(
            f"tools=[{item.__name__}] passes the class {item.__name__}; pass {hint} instead"
        )
    if isinstance(item, Tool):
        return item
    if callable(item):
        return FunctionTool(item)
    raise UserError(f"tools must be Tool instances or functions, not {type(item).__name__}")


def tool_list(tools: object) -> list[Tool]:
    if isinstance(tools, Tool) or callable(tools) or isinstance(tools, str | bytes):
        name = getattr(tools, "name", None) or getattr(tools, "__name__", "the_tool")
        raise UserError(f"tools must be a list of tools: write tools=[{name}], not tools={name}")
    try:
        items = list(cast("Sequence[Tool | Callable[..., Any]]", tools))
    except TypeError:
        raise UserError(
            f"tools must be a list of tools or functions, not {type(tools).__name__}"
        ) from None
    return [_as_tool(t) for t in items]


def check_model(model: object) -> None:
    if isinstance(model, Model):
        return
    missing = [m for m in _MODEL_MEMBERS if not hasattr(model, m)]
    raise UserError(
        f"model {model!r} is not a dive Model: it has no {', '.join(missing)}. A custom model "
        "implements name, provider, supports_streaming, stream(request) and "
        "generate(request) (see dive.llm.Model), or pass 'provider:model'"
    )


def normalise_output_type(value: object) -> Any:
    """``None`` is ``str``; a list or tuple of types is their union (one submit tool each)."""
    if value is None:
        return str
    if isinstance(value, list | tuple):
        members = tuple(cast("Sequence[Any]", value))
        if not members:
            raise UserError("output_type=[] needs at least one type")
        return Union[members]  # noqa: UP007 - built from a runtime tuple
    return value


def type_name(tp: object) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def input_messages(value: UserInput, at: datetime | None = None) -> list[Message]:
    """The input as messages; text becomes a user message created ``at``."""
    if isinstance(value, str):
        if at is None:
            return [Message.user(value)]
        return [Message(role="user", content=(TextBlock(text=value),), created_at=at)]
    if isinstance(value, Message):
        return [value]
    items = list(cast("Sequence[Any]", value))
    if all(isinstance(m, Message) for m in items):
        return cast("list[Message]", items)
    if all(isinstance(b, BLOCK_CLASSES) for b in items):
        return [Message(role="user", content=tuple(items))]
    raise InvalidRunError("input must be a string, a Message, messages or content blocks")
