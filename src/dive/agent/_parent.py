"""The tool call a run was started from: how a child run (a subagent) finds its parent.

While a tool call executes, :data:`PARENT_CALL` holds its turn and call ids. A run started
inside it (in the same task, or a task it created) records them in its turn's origin
(``parent_turn_id``, ``parent_tool_call_id``) and its run span, so records and traces link
a subagent's turns to the turn that started them.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import NamedTuple

__all__ = ["PARENT_CALL", "ParentCall"]


class ParentCall(NamedTuple):
    """The turn and tool call a child run was started from (a tuple: cheap on every call)."""

    turn_id: str
    tool_call_id: str


PARENT_CALL: ContextVar[ParentCall | None] = ContextVar("dive_parent_call", default=None)
