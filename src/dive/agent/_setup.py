"""The frozen setup of one invocation, built once before the turn boundary.

``AgentConfig`` is a snapshot of the agent's configuration taken when the invocation starts
(changing the agent afterwards does not affect a run in progress). ``TurnSetup`` adds what
the invocation was given: model, settings, session, cancel token, values, resume plan.
Nothing here changes while the turn runs; what changes lives in ``dive.turns.TurnState``, and
what the turn does to the world goes through ``runner`` (``dive.agent._runner``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dive.agent._approval import ApprovalPolicy
from dive.agent._background import BackgroundResult
from dive.agent._claims import ClaimKeeper
from dive.agent._hooks import Hooks
from dive.agent._instructions import InstructionsSpec
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._output import OutputSpec
from dive.agent._resume_plan import ResumePlan
from dive.agent._runner import IN_PROCESS, Runner
from dive.agent._usage_limits import SessionSpent, UsageLimits
from dive.llm import Model, ModelSettings
from dive.messages import ToolDefinition
from dive.sessions import Session
from dive.tools import Tool, Toolset
from dive.tracing import Tracer
from dive.turns import CancelToken, Turn

__all__ = ["REMINDER_RULE", "AgentConfig", "ToolIndex", "TurnSetup"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolIndex:
    """The tools of one model call: by name, the definitions sent, declared members."""

    by_name: Mapping[str, Tool]
    definitions: tuple[ToolDefinition, ...]
    declared: frozenset[str]

    def definition_of(self, name: str) -> ToolDefinition | None:
        """The definition of tool ``name``, if it resolves."""
        tool = self.by_name.get(name)
        return tool.definition if tool is not None else None

    def read_only(self, name: str) -> bool:
        """True if tool ``name`` resolves and is read-only."""
        tool = self.by_name.get(name)
        return tool is not None and tool.definition.read_only


REMINDER_RULE = (
    "Messages may contain <system-reminder> tags added by the application. They carry context, "
    "not instructions with authority of their own; when two reminders disagree, the later one "
    "wins."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentConfig:
    """What the loop reads from the agent, as it was when the invocation started.

    The loop never reads the live ``Agent``: changing the agent afterwards (its model,
    instructions, limits…) does not affect a run in progress.
    """

    model: Model
    model_settings: ModelSettings
    instructions: InstructionsSpec
    rules: tuple[str, ...]
    prime_reminders: bool
    name: str | None
    id: str | None
    hooks: Hooks
    limits: Limits
    usage_limits: UsageLimits | None
    session_usage_limits: UsageLimits | None
    incomplete_turns: IncompleteTurns
    durability: Durability
    tracer: Tracer
    traced: bool
    log: logging.Logger
    approval_policy: ApprovalPolicy
    default_approval: bool
    granted_permissions: frozenset[str]
    parallel_tool_execution: bool
    max_tool_concurrency: int
    output: OutputSpec
    output_retries: int
    static: ToolIndex
    toolsets: tuple[Toolset, ...]

    def system_prompt(self, rendered_instructions: str | None = None) -> str:
        """Instructions, extension and output rules, and the reminder-priming rule.

        ``rendered_instructions`` is the text of dynamic instructions for one model call;
        without it, only the static instructions are included.
        """
        text = rendered_instructions
        if text is None:
            text = self.instructions.static_text()
        parts = [text] if text else []
        parts.extend(self.rules)
        if self.prime_reminders:
            parts.append(REMINDER_RULE)
        return "\n\n".join(parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSetup:
    """One invocation's frozen setup.

    Attributes:
        agent: the ``Agent`` (what hooks see as ``ctx.agent``).
        config: the agent's configuration snapshot.
        model: the model of every call of this invocation.
        settings: agent settings merged with the run's.
        session: the session, or None for a stateless run.
        durable: step checkpoints are on (and there is a session).
        cancel: the cancel token (linked to a claim keeper's when claiming).
        values: shared values for tools and hooks.
        deps: the run's dependencies (``ctx.deps``).
        prompt_cache_key: the provider prompt-cache key.
        claim: the claim keeper, when claiming.
        session_spent: what the session's recorded turns used (with session limits).
        resume: the validated resume, when resuming.
        stored: the stored turn a resume started from (returned if a partial resume fails).
        background: background results delivered by this invocation.
        runner: where every effect of the invocation happens (the I/O seam).
    """

    agent: Any
    config: AgentConfig
    model: Model
    settings: ModelSettings
    session: Session | None
    durable: bool
    cancel: CancelToken | None
    values: dict[str, Any]
    deps: Any
    prompt_cache_key: str | None
    claim: ClaimKeeper | None = None
    session_spent: SessionSpent | None = None
    resume: ResumePlan | None = None
    stored: Turn | None = None
    background: tuple[BackgroundResult, ...] = ()
    runner: Runner = IN_PROCESS

    @property
    def session_id(self) -> str | None:
        """The session id, if any."""
        return self.session.id if self.session is not None else None

    @property
    def claim_lost(self) -> BaseException | None:
        """The error of a lost session claim, if the claim was lost."""
        return self.claim.lost if self.claim is not None else None
