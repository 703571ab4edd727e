"""Turn what a tool returned into the ``ToolResult`` block the model sees.

JSON is always standard: a non-finite float (``NaN``, ``inf``) anywhere in a tool's output
becomes the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, in the text the model sees
and in ``structured`` alike, so records and requests never carry non-standard JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from pydantic import BaseModel

from dive.messages import DocumentBlock, ImageBlock, TextBlock, ToolCall, ToolResult
from dive.tools import ToolReturn

__all__ = ["error_result", "to_tool_result"]

_BLOCKS = (TextBlock, ImageBlock, DocumentBlock)


def error_result(call: ToolCall, text: str) -> ToolResult:
    """An ``is_error`` result with ``text``."""
    return ToolResult(
        tool_call_id=call.id, name=call.name, content=(TextBlock(text=text),), is_error=True
    )


def _jsonable_mapping(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(cast("Mapping[Any, Any]", value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by its name as a string."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [_finite(v) for v in cast("list[Any]", value)]
    return value


def to_tool_result(call: ToolCall, result: Any, *, is_error: bool = False) -> ToolResult:
    """Convert a tool output; an unconvertible value becomes an error result.

    Args:
        call: the call the result answers.
        result: the tool's output.
        is_error: mark the result as an error.
    """
    output: Any = result
    if isinstance(output, int | float) and not isinstance(output, bool):
        output = _finite(output)
        text = repr(output) if isinstance(output, int) else json.dumps(output)
        if isinstance(output, str):
            text = output
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=(TextBlock(text=text),),
            structured=output,
            is_error=is_error,
        )
    if isinstance(output, str):
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=(TextBlock(text=output),) if output else (),
            is_error=is_error,
        )
    if isinstance(output, ToolReturn):
        inner = to_tool_result(call, output.content, is_error=output.is_error or is_error)
        if output.structured is not None:
            inner = replace(inner, structured=_finite(output.structured))
        return inner
    if isinstance(output, _BLOCKS):
        return ToolResult(
            tool_call_id=call.id, name=call.name, content=(output,), is_error=is_error
        )
    if isinstance(output, BaseModel):
        data = _finite(output.model_dump(mode="json"))
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=(TextBlock(text=_json_text(data)),),
            structured=data,
            is_error=is_error,
        )
    if output is None:
        return ToolResult(tool_call_id=call.id, name=call.name, is_error=is_error)
    if isinstance(output, Sequence) and output and all(isinstance(b, _BLOCKS) for b in output):  # pyright: ignore[reportUnknownVariableType]
        return ToolResult(
            tool_call_id=call.id,
            name=call.name,
            content=tuple(cast("Sequence[Any]", output)),
            is_error=is_error,
        )
    if isinstance(output, bool | int | float | Mapping | list | tuple):
        value = cast(object, output)
        try:
            data = _finite(json.loads(json.dumps(value, default=_jsonable_mapping)))
        except (TypeError, ValueError):
            pass
        else:
            return ToolResult(
                tool_call_id=call.id,
                name=call.name,
                content=(TextBlock(text=_json_text(data)),),
                structured=data,
                is_error=is_error,
            )
    return error_result(
        call,
        f'Tool "{call.name}" returned a value of type {type(result).__name__} that cannot be '
        "sent to the model.",
    )
