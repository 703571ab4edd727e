"""Handoffs: the conversation passes to another agent, as OpenAI Agents SDK users know it.

``handoff(agent)`` is a tool (``transfer_to_<name>``) for the agent that hands off. Calling it
ends that agent's turn (a terminal tool), and :func:`run_with_handoffs` then lets the target
agent take the conversation from there, with its own instructions and tools: with a session,
on the same session (a continuation turn); stateless, on the history so far, where the
target sees only the shared view (private messages are removed when history crosses an agent
boundary) and, if given, the handoff's ``input_filter``. It repeats until an agent answers
without handing off (or ``max_handoffs`` is reached) and returns the last result and agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dive.agent import DEFAULT, Agent, RunResult
from dive.errors import UserError
from dive.messages import Message, ToolDefinition, shared_view
from dive.sessions import Session
from dive.tools import Tool, ToolContext, ToolOutput, ToolReturn
from dive.turns import Reminder

__all__ = ["HandoffRun", "HandoffTool", "handoff", "run_with_handoffs"]

InputFilter = Callable[[list[Message]], list[Message]]


def _snake(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_").lower() or "agent"


class HandoffTool(Tool):
    """A tool that hands the conversation to ``target`` (see :func:`handoff`).

    Args:
        target: the agent that takes the conversation over.
        tool_name: the tool's name (default ``transfer_to_<target name>``).
        tool_description: its description (default: names the target and its description).
        input_filter: rewrites the history the target receives (drop tool calls, say).
    """

    def __init__(
        self,
        target: Agent[Any, Any],
        *,
        tool_name: str | None = None,
        tool_description: str | None = None,
        input_filter: InputFilter | None = None,
    ) -> None:
        label = target.name or "agent"
        name = tool_name or f"transfer_to_{_snake(label)}"
        about = f" {target.description}" if target.description else ""
        self.target = target
        self.input_filter = input_filter
        self.definition = ToolDefinition(
            name=name,
            description=tool_description or f"Hand off to the {label} agent.{about}",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            terminal=True,
        )

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        label = self.target.name or "agent"
        return ToolReturn(content=f"Transferred to {label}. It continues the conversation.")


def handoff(
    agent: Agent[Any, Any],
    *,
    tool_name: str | None = None,
    tool_description: str | None = None,
    input_filter: InputFilter | None = None,
) -> HandoffTool:
    """A tool that hands the conversation to ``agent``: ``Agent(tools=[handoff(billing)])``.

    Args:
        agent: the agent to hand off to (give it a ``name`` and ``description``).
        tool_name: default ``transfer_to_<agent name>``.
        tool_description: what the model is told the handoff is for.
        input_filter: reshape the history the target sees (stateless runs only).
    """
    return HandoffTool(
        agent, tool_name=tool_name, tool_description=tool_description, input_filter=input_filter
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class HandoffRun:
    """What :func:`run_with_handoffs` ended with.

    Attributes:
        result: the last agent's result.
        last_agent: the agent that gave it.
        path: the agents' names, in the order the conversation passed through them.
        results: every run's result, in order (usage is per run).
    """

    result: RunResult[Any]
    last_agent: Agent[Any, Any]
    path: tuple[str, ...]
    results: tuple[RunResult[Any], ...]


def _handed_to(agent: Agent[Any, Any], result: RunResult[Any]) -> HandoffTool | None:
    if result.status != "completed":
        return None
    tools = {t.name: t for t in agent.tools if isinstance(t, HandoffTool)}
    if not tools:
        return None
    for m in reversed(result.turn.messages):
        r = m.tool_result
        if r is not None and not r.is_error and r.name in tools:
            return tools[r.name]
        if m.role == "assistant" and not m.tool_calls:
            return None  # answered after the handoff call: no handoff
    return None


async def run_with_handoffs(
    agent: Agent[Any, Any],
    input: Any = None,
    *,
    session: Session | Any | None = DEFAULT,
    history: Sequence[Message] | None = None,
    max_handoffs: int = 10,
    **run_kwargs: Any,
) -> HandoffRun:
    """Run ``agent`` on ``input``, following its handoffs until an agent answers.

    Args:
        agent: the first agent.
        input: the user's message.
        session: the session (the first agent's by default; None forces stateless).
        history: the pre-turn history of a stateless run.
        max_handoffs: the most handoffs followed; the last result is returned then.
        run_kwargs: passed to every ``run`` (``deps``, ``on_event``, ``cancel``…).
    """
    chosen = agent.session if session is DEFAULT else session
    if chosen is not None and any(
        isinstance(t, HandoffTool) and t.input_filter is not None for t in agent.tools
    ):
        raise UserError("input_filter applies to stateless handoffs only (no session)")
    current = agent
    result = await current.run(input, session=chosen, history=history, **run_kwargs)
    results = [result]
    path = [current.name or "agent"]
    for _ in range(max_handoffs):
        tool = _handed_to(current, result)
        if tool is None:
            break
        target = tool.target
        note = Reminder(
            name="handoff",
            content=f"The conversation was handed off to you by {current.name or 'another agent'}."
            " Continue it in your role.",
        )
        if chosen is not None:
            if tool.input_filter is not None:
                raise UserError("input_filter applies to stateless handoffs only (no session)")
            result = await target.run(
                continue_turn=True, session=chosen, reminders=[note], **run_kwargs
            )
        else:
            seen = shared_view(result.all_messages())
            if tool.input_filter is not None:
                seen = tool.input_filter(seen)
            result = await target.run(
                continue_turn=True, session=None, history=seen, reminders=[note], **run_kwargs
            )
        current = target
        results.append(result)
        path.append(current.name or "agent")
    return HandoffRun(result=result, last_agent=current, path=tuple(path), results=tuple(results))
