"""Events a running tool emits through its ``ToolContext`` (part of the run's event stream)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from dive.messages import JSONValue
from dive.messages.codec import EMPTY

__all__ = ["ToolProgressEvent", "ToolStreamEvent"]


def _empty() -> Mapping[str, JSONValue]:
    return EMPTY


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStreamEvent:
    """Output a running tool appended to its stream.

    Attributes:
        tool_call_id: the call that produced the output.
        text: the text appended.
    """

    type: Literal["tool_stream"] = "tool_stream"
    tool_call_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressEvent:
    """Progress a running tool reported (the latest wins).

    Attributes:
        tool_call_id: the call reporting progress.
        display: a short progress text for people.
        metadata: JSON for programs.
    """

    type: Literal["tool_progress"] = "tool_progress"
    tool_call_id: str
    display: str
    metadata: Mapping[str, JSONValue] = field(default_factory=_empty)
