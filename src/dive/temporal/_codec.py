"""``tool_results`` as JSON text, so a caller's resume can cross Temporal.

Values become JSON as dive records them (``to_jsonable``: pydantic models and dataclasses as
their JSON data); a ``ToolApproval`` keeps its type under a tag. Decoding gives the mapping
``agent.run(tool_results=...)`` takes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dive.agent import ToolApproval
from dive.errors import UserError
from dive.messages.codec import decode, to_jsonable

__all__ = ["decode_tool_results", "encode_tool_results"]

_APPROVAL = "dive.temporal.approval"


def encode_tool_results(results: Mapping[str, Any]) -> str:
    """JSON text of ``results`` (raises ``UserError`` for a value JSON cannot carry)."""
    out: dict[str, Any] = {}
    for call_id, value in results.items():
        if not isinstance(call_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("tool_results must be keyed by tool call id strings")
        if isinstance(value, ToolApproval):
            out[call_id] = {_APPROVAL: to_jsonable(value)}
            continue
        try:
            out[call_id] = json.loads(json.dumps(to_jsonable(value)))
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"the result for call {call_id} cannot be sent to a Temporal worker "
                f"({type(value).__name__} is not JSON-serialisable): pass plain data, a pydantic "
                "model or a ToolApproval"
            ) from exc
    return json.dumps(out, separators=(",", ":"))


def decode_tool_results(text: str) -> dict[str, Any]:
    """The mapping ``encode_tool_results`` encoded."""
    data: dict[str, Any] = json.loads(text)
    out: dict[str, Any] = {}
    for call_id, value in data.items():
        if isinstance(value, dict) and _APPROVAL in value:
            out[call_id] = decode(ToolApproval, value[_APPROVAL])
        else:
            out[call_id] = value
    return out
