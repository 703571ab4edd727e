"""``Agent``: configuration plus the entry points ``run``, ``run_sync`` and ``stream``.

Order of one invocation: validate arguments → capture model and instructions → build the
history → ``session_start`` → **turn boundary** → ``pre_generation`` → response timeout
starts → loop ⇄ ``stop`` → close if incomplete → end hook → write → ``turn_ended``.
``run()`` raises only before the boundary; after it, every exit returns a ``RunResult``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, cast

from typing_extensions import TypeVar

from dive.agent._approval import ApprovalPolicy, default_policy
from dive.agent._background import BackgroundResult
from dive.agent._begin import check_arguments, load_snapshot, plan_resume_turn, plan_turn
from dive.agent._cancel import CancelToken
from dive.agent._durable import ClaimKeeper, process_owner
from dive.agent._extension import Extension
from dive.agent._hooks import Hooks, SessionStartResult, call_hook
from dive.agent._locks import session_lock
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._records import SuspensionState
from dive.agent._reminders import Reminder, reminder_message
from dive.agent._result import RunResult
from dive.agent._resume import ResumeInfo
from dive.agent._run import EventHandler, TurnRun
from dive.agent._stream import AgentStream
from dive.agent._structured import OutputTool
from dive.agent._tools import declared_members, index_tools
from dive.errors import InvalidRunError, UserError
from dive.llm import Model, ModelSettings
from dive.messages import Message, ToolDefinition
from dive.messages._blocks import BLOCK_CLASSES
from dive.sessions._protocol import Session, SessionSnapshot
from dive.tools import FunctionTool, Tool, Toolset
from dive.tracing import NopTracer, Tracer

__all__ = ["DEFAULT", "Agent", "UserInput"]


class _Default:
    """Marker for "use the agent's default session"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


@dataclass(frozen=True, slots=True, kw_only=True)
class _RunOptions:
    new: list[Message]
    history: Sequence[Message] | None
    continue_turn: bool
    background_results: tuple[BackgroundResult, ...]
    reminders: tuple[Reminder, ...]
    on_event: EventHandler | None
    cancel: CancelToken | None
    values: dict[str, Any]
    prompt_cache_key: str | None
    model_settings: ModelSettings | None
    turn_id: str | None
    expected_revision: int | None
    tool_results: Mapping[str, Any] | None = None
    suspension: SuspensionState | None = None


OutputT = TypeVar("OutputT", default=str)

UserInput = str | Message | Sequence[Message] | Sequence[Any]

REMINDER_RULE = (
    "Messages may contain <system-reminder> tags added by the application. They carry context, "
    "not instructions with authority of their own; when two reminders disagree, the later one "
    "wins."
)


def _as_tool(item: Tool | Callable[..., Any]) -> Tool:
    if isinstance(item, Tool):
        return item
    if callable(item):
        return FunctionTool(item)
    raise UserError(f"tools must be Tool instances or functions, not {type(item).__name__}")


def _input_messages(value: UserInput) -> list[Message]:
    if isinstance(value, str):
        return [Message.user(value)]
    if isinstance(value, Message):
        return [value]
    items = list(cast("Sequence[Any]", value))
    if all(isinstance(m, Message) for m in items):
        return cast("list[Message]", items)
    if all(isinstance(b, BLOCK_CLASSES) for b in items):
        return [Message(role="user", content=tuple(items))]
    raise InvalidRunError("input must be a string, a Message, messages or content blocks")


class Agent(Generic[OutputT]):
    """An agent: instructions, a model, tools and the policies that govern the loop.

    Options are keyword-only; grouped settings are small frozen objects (:class:`Limits`,
    :class:`IncompleteTurns`, :class:`Durability`, :class:`~dive.llm.ModelSettings`).
    """

    def __init__(
        self,
        *,
        model: Model | str,
        instructions: str = "",
        tools: Sequence[Tool | Callable[..., Any]] = (),
        toolsets: Sequence[Toolset] = (),
        extensions: Sequence[Extension | None] = (),
        hooks: Hooks | None = None,
        tracer: Tracer | None = None,
        name: str | None = None,
        description: str | None = None,
        version: str | None = None,
        id: str | None = None,
        model_settings: ModelSettings | None = None,
        limits: Limits | None = None,
        parallel_tool_execution: bool = False,
        max_tool_concurrency: int = 10,
        output_type: type[OutputT] | None = None,
        output_retries: int = 1,
        granted_permissions: Sequence[str] = (),
        incomplete_turns: IncompleteTurns | None = None,
        durability: Durability | None = None,
        prime_reminders: bool = True,
        session: Session | None = None,
        approval_policy: ApprovalPolicy | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if isinstance(model, str):
            from dive.providers import model as resolve

            model = resolve(model)
        if not isinstance(model, Model):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"model must be a dive Model or 'provider:model', not {model!r}")
        self.model = model
        self.name, self.description, self.version, self.id = name, description, version, id
        self.tracer: Tracer = tracer if tracer is not None else NopTracer()
        self.model_settings = model_settings or ModelSettings()
        self.limits = limits or Limits()
        self.parallel_tool_execution = parallel_tool_execution
        if max_tool_concurrency < 1:
            raise UserError("max_tool_concurrency must be at least 1")
        self.max_tool_concurrency = max_tool_concurrency
        self.granted_permissions = frozenset(granted_permissions)
        self.incomplete_turns = incomplete_turns or IncompleteTurns()
        self.durability = durability or Durability()
        self.log = logger or logging.getLogger("dive.agent")
        self.session = session
        self.approval_policy: ApprovalPolicy = approval_policy or default_policy
        self.toolsets = tuple(toolsets)
        all_tools = [_as_tool(t) for t in tools]
        merged_hooks = hooks or Hooks()
        rules: list[str] = []
        for ext in extensions:
            if ext is None:
                continue
            all_tools.extend(ext.tools())
            merged_hooks = merged_hooks.merged(ext.hooks())
            rule = ext.rules()
            if rule:
                rules.append(rule)
        self.output_type = output_type
        self.output_retries = output_retries
        self.output_tool: OutputTool | None = None
        if output_type is not None and output_type is not str:
            self.output_tool = OutputTool(output_type)
            all_tools.append(self.output_tool)
        self.hooks = merged_hooks
        self.tools: tuple[Tool, ...] = tuple(all_tools)
        self.static_tools, self.static_definitions = index_tools(self.tools)
        self.declared_members = declared_members(self.static_tools)
        self._rules = rules
        self.prime_reminders = prime_reminders
        self.instructions = instructions
        self._agent_cache_key = f"dive-agent-{uuid.uuid4().hex}"

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The static tool definitions sent to the model."""
        return self.static_definitions

    def system_prompt(self) -> str:
        """Instructions, extension rules and the reminder-priming rule."""
        parts = [self.instructions] if self.instructions else []
        parts.extend(self._rules)
        if self.prime_reminders:
            parts.append(REMINDER_RULE)
        return "\n\n".join(parts)

    # --- entry points -------------------------------------------------------------------------

    async def run(
        self,
        input: UserInput | None = None,
        *,
        history: Sequence[Message] | None = None,
        session: Session | _Default | None = DEFAULT,
        turn_id: str | None = None,
        expected_revision: int | None = None,
        continue_turn: bool = False,
        tool_results: Mapping[str, Any] | None = None,
        suspension: SuspensionState | None = None,
        background_results: Sequence[BackgroundResult] = (),
        reminders: Sequence[Reminder] = (),
        on_event: EventHandler | None = None,
        cancel: CancelToken | None = None,
        values: Mapping[str, Any] | None = None,
        prompt_cache_key: str | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunResult[OutputT]:
        """Run one turn. Raises only before the turn boundary; see ``RunResult``.

        Resume a suspended turn with ``tool_results={call_id: result or ToolApproval}``
        (statelessly: plus ``history=`` and ``suspension=``).

        Modes: new ``input``; ``continue_turn=True`` (calls the model on the history as it
        stands, re-running no tool); ``background_results`` (late results of calls whose turn
        ended). ``history`` is the pre-turn history of a stateless run; with a ``session``
        (the agent's by default, ``None`` forces stateless) the session is the history.
        """
        chosen = self.session if isinstance(session, _Default) else session
        check_arguments(
            input=input,
            history=history,
            session=chosen,
            continue_turn=continue_turn,
            background_results=background_results,
            tool_results=tool_results,
            suspension=suspension,
        )
        for r in reminders:
            if not isinstance(r, Reminder):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidRunError("reminders must be Reminder objects")
        new = _input_messages(input) if input is not None else []
        options = _RunOptions(
            new=new,
            history=history,
            continue_turn=continue_turn,
            background_results=tuple(background_results),
            reminders=tuple(reminders),
            on_event=on_event,
            cancel=cancel,
            values=dict(values or {}),
            prompt_cache_key=prompt_cache_key,
            model_settings=model_settings,
            turn_id=turn_id,
            expected_revision=expected_revision,
            tool_results=tool_results,
            suspension=suspension,
        )
        if chosen is None:
            return await self._start(options, None, None)
        async with session_lock(chosen.id):
            if not self.durability.claim:
                snap = await load_snapshot(self, chosen)
                return await self._start(options, chosen, snap)
            token = CancelToken(parent=cancel)
            keeper = ClaimKeeper(
                chosen,
                self.durability.owner or process_owner(),
                self.durability.claim_ttl,
                token,
            )
            async with keeper:
                snap = await load_snapshot(self, chosen)
                options = replace(options, cancel=token)
                return await self._start(options, chosen, snap, keeper)

    async def _start(
        self,
        o: _RunOptions,
        session: Session | None,
        snap: SessionSnapshot | None,
        keeper: ClaimKeeper | None = None,
    ) -> RunResult[OutputT]:
        resume: ResumeInfo | None = None
        state: SuspensionState | None = None
        if o.tool_results is not None:
            plan, resume, state = plan_resume_turn(
                self,
                snap=snap,
                history=o.history,
                suspension=o.suspension,
                tool_results=o.tool_results,
                turn_id=o.turn_id,
                expected_revision=o.expected_revision,
            )
        else:
            plan = plan_turn(
                self,
                snap=snap,
                history=o.history,
                new_input=o.new,
                continue_turn=o.continue_turn,
                background_results=o.background_results,
                turn_id=o.turn_id,
                expected_revision=o.expected_revision,
            )
        prior = plan.folded.usage if plan.folded is not None else None
        if state is not None:
            prior = state.usage
        run = TurnRun(
            self,
            model=self.model,
            system_prompt=self.system_prompt(),
            settings=self.model_settings.merge(o.model_settings),
            turn_id=plan.turn_id,
            origin=plan.origin,
            history=plan.history,
            on_event=o.on_event,
            cancel=o.cancel,
            values=o.values,
            session_id=session.id if session is not None else None,
            prior_usage=prior,
        )
        run.session = session
        run.durable = session is not None and self.durability.checkpoint_steps
        if keeper is not None:
            run.claim_keeper = keeper
        run.loaded_revision = snap.revision if snap is not None else 0
        run.prompt_cache_key = o.prompt_cache_key or self._cache_key(session)
        if plan.folded is not None:
            run.adopt(plan.folded)
        if state is not None:
            from dive.agent._cancel_suspended import turn_from_state

            run.stored_turn = plan.folded or turn_from_state(state)
            run.model_calls = state.model_calls
            run.executed_tool_calls = state.executed_tool_calls
            run.resume = resume
        fresh = not plan.history and not o.continue_turn and plan.folded is None and state is None
        if self.hooks.session_start and fresh:
            await self._session_start(run)
        for m in plan.record:
            run.add(m)
        for m in plan.model_only:
            run.add_model_only(m)
        for r in o.reminders:
            run.add_model_only(reminder_message(r))
        from dive.agent._execute import execute

        return cast("RunResult[OutputT]", await execute(run, o.background_results))

    async def cancel_suspended_turn(
        self,
        *,
        session: Session | _Default | None = DEFAULT,
        history: Sequence[Message] | None = None,
        suspension: SuspensionState | None = None,
        on_event: EventHandler | None = None,
    ) -> RunResult[OutputT]:
        """Close a suspended turn without a model call (outcome ``canceled``).

        Calls whose tool suspended become ``unknown``; calls held at the approval gate
        ``not_started``. The closed turn replaces the suspended one.
        """
        from dive.agent._cancel_suspended import cancel_suspended

        chosen = self.session if isinstance(session, _Default) else session
        if chosen is not None and (history is not None or suspension is not None):
            raise InvalidRunError("history= and suspension= are only for stateless cancels")
        result = await cancel_suspended(
            self, session=chosen, history=history, suspension=suspension, on_event=on_event
        )
        return cast("RunResult[OutputT]", result)

    def _cache_key(self, session: Session | None) -> str:
        """A stable prompt-cache key: per session (never the raw id), else per agent."""
        if session is not None:
            digest = hashlib.sha256(session.id.encode()).hexdigest()[:16]
            return f"dive-session-{digest}"
        return self._agent_cache_key

    def is_read_only(self, name: str) -> bool:
        """True if the agent's static tool ``name`` is read-only."""
        tool = self.static_tools.get(name)
        return tool is not None and tool.definition.read_only

    async def _session_start(self, run: TurnRun) -> None:
        ctx = run.hook_context("session_start")
        ctx.session_start_source = "new"
        for hook in self.hooks.session_start:
            out = await call_hook(hook, ctx)
            if isinstance(out, SessionStartResult):
                for m in out.messages:
                    run.history.append(m)
                    run.working.append(m)

    def run_sync(self, input: UserInput | None = None, **kwargs: Any) -> RunResult[OutputT]:
        """The blocking form of ``run`` (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(input, **kwargs))
        raise UserError("run_sync() cannot be called from a running event loop; use await run()")

    def stream(self, input: UserInput | None = None, **kwargs: Any) -> AgentStream[OutputT]:
        """An async iterator of events ending with ``turn_ended``; ``.result`` afterwards."""
        return AgentStream(lambda handler: self.run(input, on_event=handler, **kwargs))
