"""The ``Agent`` tool: run a named subagent in the foreground or the background.

Input ``{prompt, description, subagent_type, run_in_background}``. The subagent is a fresh
``Agent`` built from its definition and the parent (read from ``ctx.agent``): the tools the
definition allows (:mod:`dive.subagents._select`), its model or the parent's, its limits, and
the parent's approval policy, granted permissions and tracer, so restrictions and
permission rules hold inside it. It runs on a cancel token that follows the parent's.

- Foreground: the answer is the call's result; the subagent's usage joins the parent turn
  (``ctx.report_usage``), and its tool calls show as progress of the call.
- Background: the model at once gets a "started" result with the task id; the answer arrives
  in a later turn through ``result.background_tasks`` (``await_background_tasks`` +
  ``run(background_results=...)``), with its usage, charged to the turn that receives it.
  ``TaskStop(task_id)`` stops it; the partial answer and the reason still arrive.
- A suspension of the subagent (a question, an approval) becomes the parent's suspension:
  the parent's pending call carries the subagent's question and reason, and what it is
  resumed with is the answer. Subagents are single-use: the answer is handed to the parent's
  model (with the question and the subagent's partial work, by the extension's hook), which
  can start a new subagent with it. A background subagent cannot ask: it ends with the
  single-use message.

Its turns link to the parent: the run records the calling turn and call in its turn's
origin and run span. With a ``store``, each run is kept as a session of its own
(``<parent turn id>.<tool call id>``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from dive.agent import Agent, RunResult, ToolCallEvent
from dive.errors import UserError
from dive.llm import Model
from dive.sessions import SessionStore, validate_session_id
from dive.subagents._definition import SubagentDefinition
from dive.subagents._select import select_tools
from dive.subagents._tasks import BackgroundSubagents
from dive.tools import (
    Background,
    Suspend,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    ToolReturn,
    TypedTool,
)
from dive.turns import CancelToken

__all__ = ["SINGLE_USE_TEXT", "AgentInput", "AgentTool", "SuspendedSubagents"]

SINGLE_USE_TEXT = (
    "Subagent paused awaiting input and cannot be resumed (subagents are single-use): {prompt}"
)


class AgentInput(BaseModel):
    """The ``Agent`` tool's input."""

    prompt: str = Field(description="The task for the subagent, with everything it needs.")
    description: str = Field(description="A short (3-5 word) description of the task.")
    subagent_type: str = Field(
        default="general-purpose", description="Which subagent to run (see the list)."
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Run it in the background: you get a task id at once and its answer arrives in a "
            "later turn (do not poll). Use for long, independent work."
        ),
    )


class SuspendedSubagents:
    """Subagent questions waiting for answers, by (turn id, tool call id), in this process."""

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], Mapping[str, Any]] = {}

    def add(self, turn_id: str, call_id: str, details: Mapping[str, Any]) -> None:
        self._waiting[(turn_id, call_id)] = details
        while len(self._waiting) > 1024:
            self._waiting.pop(next(iter(self._waiting)))

    def take(self, turn_id: str, call_id: str) -> Mapping[str, Any] | None:
        return self._waiting.pop((turn_id, call_id), None)


def _describe(definitions: Mapping[str, SubagentDefinition]) -> str:
    lines = [f"- {d.name}: {d.description}" for d in definitions.values()]
    return (
        "Start a subagent: an agent of its own, with its own context, that works on a task and "
        "replies once with its result (only that reply comes back to you). Give it a complete, "
        "self-contained prompt. Available subagent types:\n" + "\n".join(lines)
    )


class AgentTool(TypedTool[AgentInput]):
    """The ``Agent`` tool (see the module docstring).

    Args:
        definitions: the subagents it can run, by name.
        store: keep each subagent run as a session of this store.
        background: the registry ``TaskStop`` uses.
        suspended: where subagent questions wait for their answers.
    """

    input_model = AgentInput
    tool_name = "Agent"
    tool_annotations = ToolAnnotations(title="Run a subagent", open_world=True)
    subagent_machinery = True

    def __init__(
        self,
        definitions: Mapping[str, SubagentDefinition],
        *,
        store: SessionStore | None = None,
        background: BackgroundSubagents | None = None,
        suspended: SuspendedSubagents | None = None,
    ) -> None:
        if not definitions:
            raise UserError("the Agent tool needs at least one subagent definition")
        self.definitions = dict(definitions)
        super().__init__()
        self.definition = replace(self.definition, description=_describe(self.definitions))
        self.store = store
        self.background = background or BackgroundSubagents()
        self.suspended = suspended or SuspendedSubagents()

    def build(self, parent: Any, definition: SubagentDefinition) -> Agent[Any, Any]:
        """The subagent: the definition's tools, model and limits, the parent's policies.

        Args:
            parent: the running agent, whose policies the subagent takes.
            definition: the subagent to build.
        """
        tools, toolsets = select_tools(parent, definition)
        model: Model | str = parent.model if definition.model is None else definition.model
        inherit = definition.model is None
        return Agent(
            model=model,
            instructions=definition.prompt,
            tools=tools,
            toolsets=toolsets,
            name=definition.name,
            description=definition.description,
            limits=definition.run_limits(),
            usage_limits=definition.usage_limits,
            approval_policy=parent.approval_policy,
            granted_permissions=tuple(parent.granted_permissions),
            tracer=parent.tracer,
            model_settings=parent.model_settings if inherit else None,
            parallel_tool_execution=parent.parallel_tool_execution,
            logger=parent.log,
        )

    async def run(self, input: AgentInput, ctx: ToolContext) -> ToolOutput:
        definition = self.definitions.get(input.subagent_type)
        if definition is None:
            known = ", ".join(sorted(self.definitions))
            return ToolReturn(
                content=f"Unknown subagent_type {input.subagent_type!r}; use one of: {known}.",
                is_error=True,
            )
        if ctx.agent is None:
            return ToolReturn(content="The Agent tool runs only inside an agent.", is_error=True)
        sub = self.build(ctx.agent, definition)
        token = CancelToken(parent=ctx.cancel_token)
        if input.run_in_background:
            return self._background(sub, definition, input, ctx, token)
        result = await self._run(sub, input, ctx, token, progress=True)
        ctx.report_usage(result.usage)
        return self._answer(definition, input, ctx, result)

    async def _run(
        self,
        sub: Agent[Any, Any],
        input: AgentInput,
        ctx: ToolContext,
        token: CancelToken,
        *,
        progress: bool,
    ) -> RunResult[Any]:
        async def on_event(event: object) -> None:
            if progress and isinstance(event, ToolCallEvent):
                await ctx.report_progress(f"{sub.name}: {event.call.name}")

        session = None
        if self.store is not None:
            session = self.store.session(_session_id(ctx))
        return await sub.run(
            input.prompt, session=session, cancel=token, deps=ctx.deps, on_event=on_event
        )

    def _answer(
        self,
        definition: SubagentDefinition,
        input: AgentInput,
        ctx: ToolContext,
        result: RunResult[Any],
    ) -> ToolOutput:
        text = result.output_text
        if result.status == "completed":
            return ToolReturn(content=text or "(the subagent replied with no text)")
        if result.status == "suspended":
            suspension = result.turn.suspension
            assert suspension is not None
            first = suspension.pending_tool_calls[0]
            details: dict[str, Any] = {
                "type": "subagent",
                "subagent_type": definition.name,
                "description": input.description,
                "subagent_turn_id": result.turn.id,
                "question": first.prompt,
                "pending": [
                    {"id": p.id, "name": p.name, "prompt": p.prompt, "reason": p.reason}
                    for p in suspension.pending_tool_calls
                ],
                "partial": text,
            }
            self.suspended.add(ctx.turn_id, ctx.tool_call_id, details)
            prompt = f"The {definition.name} subagent asks: {first.prompt}"
            return Suspend(prompt, reason=first.reason, metadata=details)
        outcome = result.outcome
        reason = outcome.reason if outcome is not None else "incomplete"
        why = f" ({outcome.error})" if outcome is not None and outcome.error else ""
        return ToolReturn(
            content=f"The {definition.name} subagent stopped before finishing: {reason}{why}. "
            f"Its partial answer: {text or '(none)'}",
            is_error=True,
        )

    def _background(
        self,
        sub: Agent[Any, Any],
        definition: SubagentDefinition,
        input: AgentInput,
        ctx: ToolContext,
        token: CancelToken,
    ) -> Background:
        task_id = f"task_{ctx.tool_call_id}"
        self.background.add(task_id, token, definition.name, input.description)

        async def work() -> ToolOutput:
            try:
                result = await self._run(sub, input, ctx, token, progress=False)
            finally:
                self.background.done(task_id)
            ctx.report_usage(result.usage)  # routed to the late result
            if result.status == "suspended":
                suspension = result.turn.suspension
                prompt = suspension.pending_tool_calls[0].prompt if suspension else ""
                return ToolReturn(content=SINGLE_USE_TEXT.format(prompt=prompt), is_error=True)
            return self._answer(definition, input, ctx, result)

        return Background(description=f"{definition.name}: {input.description}", fn=work)


def _session_id(ctx: ToolContext) -> str:
    candidate = f"{ctx.turn_id}.{ctx.tool_call_id}"
    try:
        return validate_session_id(candidate)
    except UserError:
        digest = hashlib.sha256(ctx.tool_call_id.encode()).hexdigest()[:24]
        return f"{ctx.turn_id}.{digest}"
