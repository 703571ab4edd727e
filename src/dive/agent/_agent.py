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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Generic, cast

from typing_extensions import TypeVar, Unpack

from dive.agent._approval import ApprovalPolicy, default_policy
from dive.agent._arguments import (
    UserInput,
    check_model,
    normalise_output_type,
    tool_list,
    type_name,
)
from dive.agent._begin import RunOptions, load_snapshot, prepare_run
from dive.agent._cancel_suspended import cancel_suspended
from dive.agent._claims import ClaimKeeper, process_owner
from dive.agent._execute import execute
from dive.agent._extension import Extension
from dive.agent._hooks import Hooks
from dive.agent._instructions import Instructions, InstructionsSpec
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._output import OutputMode, OutputSpec, OutputValidator
from dive.agent._result import RunResult
from dive.agent._runargs import DEFAULT, DefaultSession, RunArgs, StreamArgs, run_options
from dive.agent._runner import IN_PROCESS, Runner
from dive.agent._setup import REMINDER_RULE, AgentConfig, TurnSetup
from dive.agent._sink import EventHandler
from dive.agent._stream import AgentStream
from dive.agent._tools import index_tools
from dive.agent._usage_limits import SessionSpent, UsageLimits, spent_by
from dive.errors import InvalidRunError, UserError
from dive.llm import Model, ModelSettings, SettingsChecker
from dive.messages import Message, ToolDefinition
from dive.sessions import Session, SessionSnapshot, session_lock
from dive.tools import Tool, Toolset
from dive.tracing import NopTracer, Tracer
from dive.turns import CancelToken, SuspensionState

__all__ = ["DEFAULT", "REMINDER_RULE", "Agent", "UserInput"]


OutputT = TypeVar("OutputT", default=str)
DepsT = TypeVar("DepsT", default=None)
ValidatorT = TypeVar("ValidatorT", bound=Callable[..., Any])


def _resolved_model(model: Model | str, settings: ModelSettings | None) -> Model:
    """The agent's model: ``"provider:model"`` resolved, checked, its default settings too."""
    if isinstance(model, str):
        from dive.providers import model as resolve

        model = resolve(model)
    check_model(model)
    if settings is not None and isinstance(model, SettingsChecker):
        model.check_settings(settings)
    return model


def _merged_extensions(
    tools: list[Tool], hooks: Hooks | None, extensions: Sequence[Extension | None]
) -> tuple[list[Tool], Hooks, list[str]]:
    """The agent's tools and hooks with every extension's merged in, and their rules."""
    merged = hooks or Hooks()
    rules: list[str] = []
    for ext in extensions:
        if ext is None:
            continue
        tools.extend(ext.tools())
        merged = merged.merged(ext.hooks())
        rules.extend(_present(ext.rules()))
    return tools, merged, rules


def _present(rule: str | None) -> list[str]:
    """A rule as a list of at most one (an empty rule adds nothing)."""
    return [rule] if rule else []


class Agent(Generic[OutputT, DepsT]):
    """An agent: instructions, a model, tools and the policies that govern the loop.

    Options are keyword-only; grouped settings are small frozen objects (:class:`Limits`,
    :class:`IncompleteTurns`, :class:`Durability`, :class:`~dive.llm.ModelSettings`).

    Args:
        model: a :class:`~dive.llm.Model`, or ``"provider:model"`` (see ``dive.model``).
        instructions: the system prompt: a string, a function of the :class:`RunContext`
            (sync or async, evaluated before every model call), or a list of both (joined
            with blank lines). The prompt only changes when the rendered text changes, so
            the prompt-cache prefix survives calls that render the same text.
        tools: tools or plain functions (made into tools with ``@tool`` defaults).
        toolsets: toolsets resolved before every model call.
        extensions: bundles of tools, hooks and rules, merged at construction.
        hooks: hook lists by point (see ``HOOK_POLICIES`` for what each may change).
        tracer: receives spans; observes, never modifies.
        name: the agent's name (tracer spans, tool contexts, A2A and MCP cards).
        description: what the agent does (A2A agent cards, served MCP tools).
        version: the agent's version (A2A agent cards).
        id: the agent's id (tracer spans).
        model_settings: default settings of every model call (a run's are merged over them).
        limits: per-turn limits (model calls, tool calls, pauses, response timeout).
        usage_limits: a turn's budget of requests, tool calls (total and per tool), tokens
            and cost; reaching one ends the turn incomplete with reason ``usage_limit``.
        session_usage_limits: the same budget for a whole session (every recorded turn
            plus the running one); needs a session.
        parallel_tool_execution: run the calls of one response concurrently (the default);
            calls of ``sequential_only`` or halting tools still make their batch sequential,
            and results are always recorded in the model's order.
        max_tool_concurrency: calls in flight at once in a parallel batch (default 10).
        output_type: the type of ``result.output``: ``str`` (the default: the final text)
            or any type pydantic validates (models, dataclasses, TypedDicts, ``int``,
            ``list[X]``, ``Literal[...]``, unions). A list ``[A, B]`` means ``A | B`` and
            lets the type checker infer ``Agent[A | B]``; for ``Literal[...]`` and written
            unions, annotate the variable (``agent: Agent[Literal["y", "n"]] = ...``).
        output_mode: how a non-``str`` output is asked for: ``"tool"`` (a terminal
            ``submit_result`` tool, the default), ``"native"`` (the provider's JSON-schema
            response format) or ``"prompted"`` (the schema in the system prompt, JSON in the
            answer).
        output_validators: functions ``fn(output)`` or ``fn(ctx, output)`` (sync or async)
            run on a schema-valid output; each returns the output (maybe changed) or raises
            ``ModelRetry(message)`` to send the message to the model.
        output_retries: failed output attempts (schema, text instead of the tool, or a
            ``ModelRetry``) allowed before the turn ends incomplete with reason ``error``.
        deps_type: the type of ``run(deps=...)``, seen as ``ctx.deps`` by tools
            (``ToolContext[Deps]``), hooks, instructions functions and output validators
            (``RunContext[Deps]``). Only for type checking and a run-time type check.
        granted_permissions: permissions tools may require (``"*"`` grants all).
        incomplete_turns: how incomplete turns are closed and saved.
        durability: step checkpoints and session claims.
        prime_reminders: add the rule explaining ``<system-reminder>`` tags to the prompt.
        session: the default session of ``run()`` (None: stateless).
        approval_policy: decides allow/deny/ask per call (default: ask for
            ``requires_approval`` tools).
        logger: where dive logs (default ``logging.getLogger("dive.agent")``).
    """

    def __init__(
        self,
        *,
        model: Model | str,
        instructions: Instructions[DepsT] = "",
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
        usage_limits: UsageLimits | None = None,
        session_usage_limits: UsageLimits | None = None,
        parallel_tool_execution: bool = True,
        max_tool_concurrency: int = 10,
        output_type: type[OutputT] | Sequence[type[OutputT]] | Any = None,
        output_mode: OutputMode = "tool",
        output_validators: Sequence[OutputValidator] = (),
        output_retries: int = 1,
        deps_type: type[DepsT] | None = None,
        granted_permissions: Sequence[str] = (),
        incomplete_turns: IncompleteTurns | None = None,
        durability: Durability | None = None,
        prime_reminders: bool = True,
        session: Session | None = None,
        approval_policy: ApprovalPolicy | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.model = _resolved_model(model, model_settings)
        self.name, self.description, self.version, self.id = name, description, version, id
        self.tracer: Tracer = tracer if tracer is not None else NopTracer()
        self.model_settings = model_settings or ModelSettings()
        self.limits = limits or Limits()
        self.usage_limits = usage_limits
        self.session_usage_limits = session_usage_limits
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
        own_tools, self.hooks, rules = _merged_extensions(tool_list(tools), hooks, extensions)
        self._set_output(output_type, output_mode, output_validators, output_retries)
        self.deps_type = deps_type
        self.tools: tuple[Tool, ...] = (*own_tools, *self.output.tools)
        self._static = index_tools(self.tools)
        self._rules = [*rules, *_present(self.output.prompt_rule())]
        self.prime_reminders = prime_reminders
        self.instructions = InstructionsSpec(instructions)
        self._agent_cache_key = f"dive-agent-{uuid.uuid4().hex}"

    def _set_output(
        self,
        output_type: object,
        output_mode: OutputMode,
        output_validators: Sequence[OutputValidator],
        output_retries: int,
    ) -> None:
        """Validate and keep the output options (see ``output_type`` … ``output_retries``)."""
        self.output_type: Any = normalise_output_type(output_type)
        if output_retries < 0:
            raise UserError("output_retries must not be negative")
        self.output_retries = output_retries
        self.output = OutputSpec(self.output_type, output_mode, output_validators)

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The static tool definitions sent to the model."""
        return self._static.definitions

    def _config(self) -> AgentConfig:
        """A snapshot of the configuration for one invocation."""
        tracer = self.tracer
        return AgentConfig(
            model=self.model,
            model_settings=self.model_settings,
            instructions=self.instructions,
            rules=tuple(self._rules),
            prime_reminders=self.prime_reminders,
            name=self.name,
            id=self.id,
            hooks=self.hooks,
            limits=self.limits,
            usage_limits=self.usage_limits,
            session_usage_limits=self.session_usage_limits,
            incomplete_turns=self.incomplete_turns,
            durability=self.durability,
            tracer=tracer,
            traced=not isinstance(tracer, NopTracer),
            log=self.log,
            approval_policy=self.approval_policy,
            default_approval=self.approval_policy is default_policy,
            granted_permissions=self.granted_permissions,
            parallel_tool_execution=self.parallel_tool_execution,
            max_tool_concurrency=self.max_tool_concurrency,
            output=self.output,
            output_retries=self.output_retries,
            static=self._static,
            toolsets=self.toolsets,
        )

    def system_prompt(self, rendered_instructions: str | None = None) -> str:
        """Instructions, extension and output rules, and the reminder-priming rule.

        ``rendered_instructions`` is the text of dynamic instructions for one model call;
        without it, only the static instructions are included.

        Args:
            rendered_instructions: the text of dynamic instructions for one model call; None
                includes only the static instructions.
        """
        return self._config().system_prompt(rendered_instructions)

    def output_validator(self, fn: ValidatorT) -> ValidatorT:
        """Decorator: register an output validator (see ``output_validators``).

        Args:
            fn: ``fn(output)`` or ``fn(ctx, output)``, sync or async; returns the output (maybe
                changed) or raises ``ModelRetry``.
        """
        self.output.add_validator(fn)
        return fn

    # --- entry points -------------------------------------------------------------------------

    async def run(
        self, input: UserInput | None = None, **args: Unpack[RunArgs[DepsT]]
    ) -> RunResult[OutputT]:
        """Run one turn. Raises only before the turn boundary; see ``RunResult``.

        Args:
            input: the user's message: text, a ``Message``, messages or content blocks.
            **args: the run's options (:class:`RunArgs`): ``history``, ``session``,
                ``turn_id``, ``expected_revision``, ``continue_turn``, ``tool_results``,
                ``suspension``, ``background_results``, ``reminders``, ``on_event``,
                ``on_text``, ``cancel``, ``deps``, ``values``, ``prompt_cache_key``,
                ``model_settings``, ``runner``.

        Resume a suspended turn with ``tool_results={call_id: result or ToolApproval}``
        (statelessly: plus ``history=`` and ``suspension=``).

        Modes: new ``input``; ``continue_turn=True`` (calls the model on the history as it
        stands, re-running no tool); ``background_results`` (late results of calls whose turn
        ended). ``history`` is the pre-turn history of a stateless run; with a ``session``
        (the agent's by default, ``None`` forces stateless) the session is the history.
        """
        options, chosen = run_options(input, args, self.session)
        self._check_deps(options.deps)
        effects = options.runner
        cancel = options.cancel
        config = self._config()
        if chosen is None:
            return await self._start(config, options, None, None)
        async with session_lock(chosen.id):
            if not self.durability.claim:
                snap = await load_snapshot(config, chosen, effects)
                return await self._start(config, options, chosen, snap)
            token = CancelToken(parent=cancel)
            keeper = ClaimKeeper(
                chosen,
                self.durability.owner or process_owner(),
                self.durability.claim_ttl,
                token,
                effects,
            )
            async with keeper:
                snap = await load_snapshot(config, chosen, effects)
                options = replace(options, cancel=token)
                return await self._start(config, options, chosen, snap, keeper)

    async def _session_spent(self, session: Session | None, runner: Runner) -> SessionSpent | None:
        if self.session_usage_limits is None or session is None:
            return None
        return spent_by(await runner.load_turns(session))

    def _check_deps(self, deps: object) -> None:
        expected = self.deps_type
        if expected is None or expected is type(None):
            return
        if deps is None:
            raise InvalidRunError(
                f"this agent has deps_type={type_name(expected)}: pass run(deps=...)"
            )
        if isinstance(expected, type) and not isinstance(deps, expected):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRunError(
                f"deps must be a {type_name(expected)} (the agent's deps_type), not "
                f"{type(deps).__name__}"
            )

    async def _start(
        self,
        config: AgentConfig,
        o: RunOptions,
        session: Session | None,
        snap: SessionSnapshot | None,
        keeper: ClaimKeeper | None = None,
    ) -> RunResult[OutputT]:
        model = config.model
        settings = config.model_settings.merge(o.model_settings)
        if o.model_settings is not None and isinstance(model, SettingsChecker):
            model.check_settings(settings)
        setup = TurnSetup(
            agent=self,
            config=config,
            model=model,
            settings=settings,
            session=session,
            durable=session is not None and self.durability.checkpoint_steps,
            cancel=o.cancel,
            values=o.values,
            deps=o.deps,
            prompt_cache_key=o.prompt_cache_key or self._cache_key(session),
            claim=keeper,
            background=o.background_results,
            session_spent=await self._session_spent(session, o.runner),
            runner=o.runner,
        )
        run = await prepare_run(setup, o, snap, config.system_prompt())
        return cast("RunResult[OutputT]", await execute(run))

    async def cancel_suspended_turn(
        self,
        *,
        session: Session | DefaultSession | None = DEFAULT,
        history: Sequence[Message] | None = None,
        suspension: SuspensionState | None = None,
        on_event: EventHandler | None = None,
        runner: Runner | None = None,
    ) -> RunResult[OutputT]:
        """Close a suspended turn without a model call (outcome ``canceled``).

        Calls whose tool suspended become ``unknown``; calls held at the approval gate
        ``not_started``. The closed turn replaces the suspended one.

        Args:
            session: the session (the agent's by default; ``None`` for a stateless cancel).
            history: the history before the suspended turn (stateless).
            suspension: the ``SuspensionState`` of the suspended turn (stateless).
            on_event: called with every event (sync or async).
            runner: where the store reads and writes happen (default: in process).
        """
        chosen = self.session if isinstance(session, DefaultSession) else session
        if chosen is not None and (history is not None or suspension is not None):
            raise InvalidRunError("history= and suspension= are only for stateless cancels")
        result = await cancel_suspended(
            self,
            self._config(),
            session=chosen,
            history=history,
            suspension=suspension,
            on_event=on_event,
            runner=runner if runner is not None else IN_PROCESS,
        )
        return cast("RunResult[OutputT]", result)

    def _cache_key(self, session: Session | None) -> str:
        """A stable prompt-cache key: per session (never the raw id), else per agent."""
        if session is not None:
            digest = hashlib.sha256(session.id.encode()).hexdigest()[:16]
            return f"dive-session-{digest}"
        return self._agent_cache_key

    def run_sync(
        self, input: UserInput | None = None, **args: Unpack[RunArgs[DepsT]]
    ) -> RunResult[OutputT]:
        """The blocking form of ``run`` (not from inside a running event loop).

        Takes exactly ``run``'s arguments; ``on_text=print`` shows the answer as it arrives.

        Args:
            input: the user's message (as for ``run``).
            **args: the run's options (:class:`RunArgs`, as for ``run``).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UserError(
                "run_sync() cannot be called from a running event loop; use await run()"
            )
        return asyncio.run(self.run(input, **args))

    def stream(
        self, input: UserInput | None = None, **args: Unpack[StreamArgs[DepsT]]
    ) -> AgentStream[OutputT]:
        """The run's events as they happen: ``async for event in agent.stream(...)``.

        Also ``async with agent.stream(...) as s:`` with ``s.text_deltas()``, ``s.text()``,
        ``s.partial_output()`` and ``s.result``; takes ``run``'s arguments except the
        handlers (the stream is the handler).

        Args:
            input: the user's message (as for ``run``).
            **args: the run's options but the handlers (:class:`StreamArgs`).
        """
        for handler in ("on_event", "on_text"):
            if handler in args:
                raise TypeError(f"stream() got an unexpected keyword argument {handler!r}")

        def start(handler: EventHandler) -> Awaitable[RunResult[Any]]:
            return self.run(input, on_event=handler, **args)

        return AgentStream(start, self.output)
