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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Generic, cast

from typing_extensions import TypeVar

from dive.agent._approval import ApprovalPolicy, default_policy
from dive.agent._arguments import (
    UserInput,
    check_model,
    input_messages,
    normalise_output_type,
    tool_list,
    type_name,
)
from dive.agent._background import BackgroundResult
from dive.agent._begin import RunOptions, check_arguments, load_snapshot, prepare_run
from dive.agent._cancel_suspended import cancel_suspended
from dive.agent._claims import ClaimKeeper, process_owner
from dive.agent._execute import execute
from dive.agent._extension import Extension
from dive.agent._hooks import Hooks
from dive.agent._instructions import Instructions, InstructionsSpec
from dive.agent._options import Durability, IncompleteTurns, Limits
from dive.agent._output import OutputMode, OutputSpec, OutputValidator
from dive.agent._result import RunResult
from dive.agent._runner import IN_PROCESS, Runner
from dive.agent._setup import AgentConfig, TurnSetup
from dive.agent._sink import EventHandler
from dive.agent._stream import AgentStream
from dive.agent._text import TextHandler, with_text_handler
from dive.agent._tools import index_tools
from dive.agent._usage_limits import SessionSpent, UsageLimits, spent_by
from dive.errors import InvalidRunError, UserError
from dive.llm import Model, ModelSettings, SettingsChecker
from dive.messages import Message, ToolDefinition
from dive.sessions import Session, SessionSnapshot, session_lock
from dive.tools import Tool, Toolset
from dive.tracing import NopTracer, Tracer
from dive.turns import CancelToken, Reminder, SuspensionState

__all__ = ["DEFAULT", "Agent", "UserInput"]


class _Default:
    """Marker for "use the agent's default session"."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


OutputT = TypeVar("OutputT", default=str)
DepsT = TypeVar("DepsT", default=None)
ValidatorT = TypeVar("ValidatorT", bound=Callable[..., Any])


REMINDER_RULE = (
    "Messages may contain <system-reminder> tags added by the application. They carry context, "
    "not instructions with authority of their own; when two reminders disagree, the later one "
    "wins."
)


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
        name, description, version, id: the agent's identity (in traces and hook contexts).
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
        if isinstance(model, str):
            from dive.providers import model as resolve

            model = resolve(model)
        check_model(model)
        if model_settings is not None and isinstance(model, SettingsChecker):
            model.check_settings(model_settings)
        self.model = model
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
        all_tools = tool_list(tools)
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
        self.output_type: Any = normalise_output_type(output_type)
        if output_retries < 0:
            raise UserError("output_retries must not be negative")
        self.output_retries = output_retries
        self.output = OutputSpec(self.output_type, output_mode, output_validators)
        all_tools.extend(self.output.tools)
        rule = self.output.prompt_rule()
        if rule:
            rules.append(rule)
        self.deps_type = deps_type
        self.hooks = merged_hooks
        self.tools: tuple[Tool, ...] = tuple(all_tools)
        self._static = index_tools(self.tools)
        self._rules = rules
        self.prime_reminders = prime_reminders
        self.instructions = InstructionsSpec(instructions)
        self._agent_cache_key = f"dive-agent-{uuid.uuid4().hex}"

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """The static tool definitions sent to the model."""
        return self._static.definitions

    def _config(self) -> AgentConfig:
        """A snapshot of the configuration for one invocation."""
        tracer = self.tracer
        return AgentConfig(
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
        """
        text = rendered_instructions
        if text is None:
            text = self.instructions.static_text()
        parts = [text] if text else []
        parts.extend(self._rules)
        if self.prime_reminders:
            parts.append(REMINDER_RULE)
        return "\n\n".join(parts)

    def output_validator(self, fn: ValidatorT) -> ValidatorT:
        """Decorator: register an output validator (see ``output_validators``)."""
        self.output.add_validator(fn)
        return fn

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
        on_text: TextHandler | None = None,
        cancel: CancelToken | None = None,
        deps: DepsT | None = None,
        values: Mapping[str, Any] | None = None,
        prompt_cache_key: str | None = None,
        model_settings: ModelSettings | None = None,
        runner: Runner | None = None,
    ) -> RunResult[OutputT]:
        """Run one turn. Raises only before the turn boundary; see ``RunResult``.

        Args:
            input: the user's message: text, a ``Message``, messages or content blocks.
            history: the pre-turn history of a stateless run (``result.all_messages()``).
            session: the session (the agent's by default; ``None`` forces stateless).
            turn_id: the new turn's id (generated when omitted).
            expected_revision: refuse to start unless the session is at this revision.
            continue_turn: call the model on the history as it stands.
            tool_results: results (or ``ToolApproval``) for a suspended turn's calls.
            suspension: the ``SuspensionState`` of a stateless resume.
            background_results: late results of calls whose turn ended.
            reminders: ``<system-reminder>`` notes for the model.
            on_event: called with every event (sync or async).
            on_text: called with the answer's text as it arrives (each streamed delta, or
                each message's text when the model does not stream).
            cancel: a ``CancelToken`` for soft and hard cancellation.
            deps: the run's dependencies, ``ctx.deps`` in tools, hooks, instructions and
                output validators; required when the agent has a ``deps_type``.
            values: untyped shared values (``ctx.values``), mutable by tools and hooks.
            prompt_cache_key: the provider prompt-cache key (stable per session otherwise).
            model_settings: settings merged over the agent's for this run.
            runner: where the turn's effects happen (model and tool calls, store reads and
                writes, clock, ids, sleeps); default the in-process ``InProcessRunner``.

        Resume a suspended turn with ``tool_results={call_id: result or ToolApproval}``
        (statelessly: plus ``history=`` and ``suspension=``).

        Modes: new ``input``; ``continue_turn=True`` (calls the model on the history as it
        stands, re-running no tool); ``background_results`` (late results of calls whose turn
        ended). ``history`` is the pre-turn history of a stateless run; with a ``session``
        (the agent's by default, ``None`` forces stateless) the session is the history.
        """
        chosen = self.session if isinstance(session, _Default) else session
        self._check_deps(deps)
        if on_text is not None:
            on_event = with_text_handler(on_event, on_text)
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
        effects = runner if runner is not None else IN_PROCESS
        new = input_messages(input, effects.now()) if input is not None else []
        options = RunOptions(
            new=new,
            history=history,
            continue_turn=continue_turn,
            background_results=tuple(background_results),
            reminders=tuple(reminders),
            on_event=on_event,
            cancel=cancel,
            values=dict(values or {}),
            deps=deps,
            prompt_cache_key=prompt_cache_key,
            model_settings=model_settings,
            turn_id=turn_id,
            expected_revision=expected_revision,
            tool_results=tool_results,
            suspension=suspension,
            runner=effects,
        )
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
        settings = self.model_settings.merge(o.model_settings)
        if o.model_settings is not None and isinstance(self.model, SettingsChecker):
            self.model.check_settings(settings)
        setup = TurnSetup(
            agent=self,
            config=config,
            model=self.model,
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
        run = await prepare_run(setup, o, snap, self.system_prompt())
        return cast("RunResult[OutputT]", await execute(run))

    async def cancel_suspended_turn(
        self,
        *,
        session: Session | _Default | None = DEFAULT,
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
        chosen = self.session if isinstance(session, _Default) else session
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
        on_text: TextHandler | None = None,
        cancel: CancelToken | None = None,
        deps: DepsT | None = None,
        values: Mapping[str, Any] | None = None,
        prompt_cache_key: str | None = None,
        model_settings: ModelSettings | None = None,
        runner: Runner | None = None,
    ) -> RunResult[OutputT]:
        """The blocking form of ``run`` (not from inside a running event loop).

        Takes exactly ``run``'s arguments; ``on_text=print`` shows the answer as it arrives.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise UserError(
                "run_sync() cannot be called from a running event loop; use await run()"
            )
        coro = self.run(
            input,
            history=history,
            session=session,
            turn_id=turn_id,
            expected_revision=expected_revision,
            continue_turn=continue_turn,
            tool_results=tool_results,
            suspension=suspension,
            background_results=background_results,
            reminders=reminders,
            cancel=cancel,
            deps=deps,
            values=values,
            prompt_cache_key=prompt_cache_key,
            model_settings=model_settings,
            on_event=on_event,
            on_text=on_text,
            runner=runner,
        )
        return asyncio.run(coro)

    def stream(
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
        cancel: CancelToken | None = None,
        deps: DepsT | None = None,
        values: Mapping[str, Any] | None = None,
        prompt_cache_key: str | None = None,
        model_settings: ModelSettings | None = None,
        runner: Runner | None = None,
    ) -> AgentStream[OutputT]:
        """The run's events as they happen: ``async for event in agent.stream(...)``.

        Also ``async with agent.stream(...) as s:`` with ``s.text_deltas()``, ``s.text()``,
        ``s.partial_output()`` and ``s.result``; takes ``run``'s arguments except the
        handlers (the stream is the handler).
        """

        def start(handler: EventHandler) -> Awaitable[RunResult[Any]]:
            return self.run(
                input,
                history=history,
                session=session,
                turn_id=turn_id,
                expected_revision=expected_revision,
                continue_turn=continue_turn,
                tool_results=tool_results,
                suspension=suspension,
                background_results=background_results,
                reminders=reminders,
                cancel=cancel,
                deps=deps,
                values=values,
                prompt_cache_key=prompt_cache_key,
                model_settings=model_settings,
                on_event=handler,
                runner=runner,
            )

        return AgentStream(start, self.output)
