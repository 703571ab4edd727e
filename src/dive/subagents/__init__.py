"""Subagents and handoffs: agents that other agents start, or hand the conversation to.

- :class:`Subagents` (an extension) gives an agent the ``Agent`` tool, which runs a named
  :class:`SubagentDefinition` — its own instructions, a tool allowlist and denylist, a model,
  limits — in the foreground (its answer is the call's result) or the background (the answer
  arrives in a later turn), and ``TaskStop`` for background runs. Built-ins:
  ``general-purpose`` and the read-only ``explore`` and ``plan``; more from Markdown files
  with YAML front matter (:func:`load_subagents`). A subagent's usage and cost join the parent
  turn, its suspensions become the parent's, and its turns name the parent turn.
- :func:`handoff` and :func:`run_with_handoffs`: transfer the conversation to another agent.

See ``docs/subagents.md``.
"""

from dive.subagents._builtin import BUILTIN_SUBAGENTS, EXPLORE, GENERAL_PURPOSE, PLAN
from dive.subagents._definition import (
    DEFAULT_AGENT_DIRS,
    DEFAULT_TIMEOUT,
    SubagentDefinition,
    load_subagents,
)
from dive.subagents._extension import Subagents
from dive.subagents._handoff import HandoffRun, HandoffTool, handoff, run_with_handoffs
from dive.subagents._tasks import BackgroundSubagents, TaskStop
from dive.subagents._tool import SINGLE_USE_TEXT, AgentInput, AgentTool

__all__ = [
    "BUILTIN_SUBAGENTS",
    "DEFAULT_AGENT_DIRS",
    "DEFAULT_TIMEOUT",
    "EXPLORE",
    "GENERAL_PURPOSE",
    "PLAN",
    "SINGLE_USE_TEXT",
    "AgentInput",
    "AgentTool",
    "BackgroundSubagents",
    "HandoffRun",
    "HandoffTool",
    "Subagents",
    "SubagentDefinition",
    "TaskStop",
    "handoff",
    "load_subagents",
    "run_with_handoffs",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
