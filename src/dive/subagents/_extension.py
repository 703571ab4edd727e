"""``Subagents``: the extension that gives an agent the ``Agent`` and ``TaskStop`` tools.

Its rules tell the model which subagents exist; its ``post_tool_use`` hook turns the answer a
suspended subagent was resumed with into a result the parent's model can use (the question,
the answer and the subagent's partial work), since subagents are single-use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from dive.agent import HookContext, Hooks
from dive.messages import TextBlock, ToolResult
from dive.sessions import SessionStore
from dive.subagents._builtin import BUILTIN_SUBAGENTS
from dive.subagents._definition import SubagentDefinition, load_subagents
from dive.subagents._tasks import BackgroundSubagents, TaskStop
from dive.subagents._tool import AgentTool, SuspendedSubagents
from dive.tools import Tool

__all__ = ["Subagents"]


class Subagents:
    """An extension: ``Agent(extensions=[Subagents()])``.

    Args:
        definitions: extra subagents (definitions, or a mapping by name); they replace
            built-ins of the same name.
        paths: Markdown definition files or directories to load (see ``load_subagents``).
        builtins: include ``general-purpose``, ``explore`` and ``plan``.
        store: keep every subagent run as a session of this store.
    """

    def __init__(
        self,
        definitions: Iterable[SubagentDefinition] | Mapping[str, SubagentDefinition] = (),
        *,
        paths: Iterable[str | Path] | None = None,
        builtins: bool = True,
        store: SessionStore | None = None,
    ) -> None:
        found: dict[str, SubagentDefinition] = dict(BUILTIN_SUBAGENTS) if builtins else {}
        if paths is not None:
            found.update(load_subagents(paths))
        given: Iterable[SubagentDefinition] = (
            list(cast("Mapping[str, SubagentDefinition]", definitions).values())
            if isinstance(definitions, Mapping)
            else definitions
        )
        for d in given:
            found[d.name] = d
        self.definitions = found
        self.tasks = BackgroundSubagents()
        self.suspended = SuspendedSubagents()
        self.agent_tool = AgentTool(
            found, store=store, background=self.tasks, suspended=self.suspended
        )
        self.stop_tool = TaskStop(self.tasks)

    def tools(self) -> Sequence[Tool]:
        return [self.agent_tool, self.stop_tool]

    def hooks(self) -> Hooks | None:
        return Hooks(post_tool_use=[self._answered], post_tool_use_failure=[self._answered])

    def rules(self) -> str | None:
        return (
            "Use the Agent tool to hand self-contained tasks to a subagent (types: "
            + ", ".join(sorted(self.definitions))
            + "); it returns one final report. Launch independent subagents in the same "
            "response to run them in parallel; a background one's result arrives in a later "
            "turn, so do not wait for it."
        )

    async def _answered(self, ctx: HookContext[Any]) -> None:
        """A suspended subagent's call answered on resume: say what the answer answers."""
        call, result, turn = ctx.call, ctx.tool_result, ctx.turn
        if call is None or result is None or turn is None or call.name != self.agent_tool.name:
            return
        details = self.suspended.take(turn.id, call.id) or await _stored(ctx, call.id)
        if details is None:
            return
        answer = result.text or "(no text)"
        text = (
            f"The {details.get('subagent_type')} subagent stopped to ask: "
            f'"{details.get("question")}". The answer given: {answer}\n'
            "Subagents are single-use: start a new one with this answer in its prompt if the "
            f"work should go on. Its partial work: {details.get('partial') or '(none)'}"
        )
        ctx.tool_result = ToolResult(
            tool_call_id=result.tool_call_id,
            name=result.name,
            content=(TextBlock(text=text),),
            is_error=result.is_error,
        )


async def _stored(ctx: HookContext[Any], call_id: str) -> Mapping[str, Any] | None:
    """The subagent details of a pending call, from the session's stored suspension."""
    if ctx.session is None:
        return None
    snap = await ctx.session.load()
    turn = snap.open_turn
    if turn is None or turn.suspension is None:
        return None
    for p in turn.suspension.pending_tool_calls:
        if p.id == call_id and p.metadata.get("type") == "subagent":
            return p.metadata
    return None
