"""``Executor[Request, Response]``: one request in, one validated response out.

A thin typed façade over the agent loop: it renders the prompt, assembles the tools (the
caller's, the submit tool), configures an ``Agent`` (settings, round budget, concurrency,
caching, no final-answer forcing) and interprets each turn's result (``_drive``). When a
turn ends without a commit, the executor continues the conversation statelessly with the
loop's ``history=``: a redirect to the submit tool, a parse repair in text mode, or a
continuation after an output-limit cut-off; every model call but a pause resend counts
against ``max_rounds``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Generic, cast

from pydantic import BaseModel
from typing_extensions import TypeVar

from dive.agent import Agent, RunResult
from dive.executor._control import Control
from dive.executor._drive import Driver
from dive.executor._errors import (
    ExecutorConfigError,
    ExecutorError,
)
from dive.executor._metrics import record_metrics
from dive.executor._options import ExecutorOptions, resource_labels
from dive.executor._outcomes import Outcomes
from dive.executor._result import ExecutionResult
from dive.executor._seeds import run_seeds
from dive.executor._steps import (
    build,
    continue_turn,
    outcome_of,
    send_first,
    settled,
)
from dive.executor._submit import ResultValidator, SubmitTool
from dive.executor._submit_tool import SubmitLoopTool
from dive.executor._suspend import (
    ConfigDriftError,
    ExecutionSuspended,
    Suspension,
    digest,
    frame_answer,
)
from dive.executor._tools import ExecutorTool, HandlerTool
from dive.executor._trace import ExecutionTrace
from dive.executor._tracers import record_trace
from dive.llm import Model, ModelSettings
from dive.messages import Message, TextBlock, ToolCall
from dive.prompts import Bindable, Prompt
from dive.providers import TEMPERATURE_DROPPED, RetryPolicy, settings_warnings
from dive.tools import Tool
from dive.tracing import Tracer

__all__ = ["Executor"]

log = logging.getLogger("dive.executor")

RequestT = TypeVar("RequestT", bound=Bindable, default=Bindable)
ResponseT = TypeVar("ResponseT", bound=BaseModel, default=BaseModel)


class Executor(Generic[RequestT, ResponseT]):
    """Turns a ``Bindable`` request into a validated ``response_type`` through a conversation.

    Args:
        model: a dive ``Model`` or ``"provider:model"``. ``options.retry``, when set, is the
            policy of its calls: a string is built with it, a model object is used through a
            copy with it (the object itself is left as it was).
        prompt: the user prompt template; ``request.bind(prompt)`` fills it.
        response_type: the pydantic model of the result.
        options: see ``ExecutorOptions``.
        submit_tool: the submit tool's naming (None: text mode, JSON read from the answer).
        result_validators: ``fn(response, ctx) -> findings`` (sync or async), run concurrently
            after the built-in schema check; findings go back to the model.
        system_instructions: the system prompt (built once per execute, without the request).
        user_prompt_suffix: a second block of the first user message (built without the
            request), e.g. per-run instructions after a large cached payload.
        suspend_tool: a tool whose handler returns ``dive.tools.Suspend(prompt)`` to wait
            for a person; ``execute`` then raises ``ExecutionSuspended``.
        name: the agent name in traces.
        tracer: a ``dive.tracing.Tracer``: receives the loop's spans of every execution
            (e.g. ``dive.otel.OTelTracer()``) and, if it defines ``record(trace)``, each
            finished ``ExecutionTrace``. ``use_tracer`` installs one per response type.
    """

    def __init__(
        self,
        model: Model | str,
        prompt: Prompt,
        *,
        response_type: type[ResponseT],
        options: ExecutorOptions | None = None,
        submit_tool: SubmitTool | None = None,
        result_validators: Sequence[ResultValidator[ResponseT]] = (),
        system_instructions: Prompt | None = None,
        user_prompt_suffix: Prompt | None = None,
        suspend_tool: ExecutorTool[Any] | None = None,
        name: str | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.options = options or ExecutorOptions()
        if not (isinstance(response_type, type) and issubclass(response_type, BaseModel)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ExecutorConfigError(
                f"response_type must be a pydantic BaseModel subclass, not {response_type!r}"
            )
        if isinstance(model, str):
            from dive.providers import model as resolve

            spec = (
                model
                if ":" in model or self.options.model is None
                else f"{model}:{self.options.model}"
            )
            model = resolve(spec, retry=self.options.retry)
        elif self.options.retry is not None:
            model = _with_retry(model, self.options.retry)
        self.model: Model = model
        self.prompt = prompt
        self.response_type = response_type
        self.submit_tool = submit_tool
        self.result_validators = tuple(result_validators)
        self.system_instructions = system_instructions
        self.user_prompt_suffix = user_prompt_suffix
        self.suspend_tool = suspend_tool
        self.name = name
        self.tracer = tracer
        if (
            suspend_tool is not None
            and submit_tool is not None
            and suspend_tool.definition.name == submit_tool.name
        ):
            raise ExecutorConfigError(
                f"suspend tool {submit_tool.name!r} collides with the submit tool name; the run "
                "could never terminate"
            )
        _check_temperature(self.options, self.model.provider)
        gate = self.options.force_submit_defer_until
        if gate is not None and submit_tool is not None and gate == submit_tool.name:
            raise ExecutorConfigError("force_submit_defer_until cannot name the submit tool")

    # --- one execute ----------------------------------------------------------------------

    async def execute(
        self,
        request: RequestT,
        tools: Mapping[str, ExecutorTool[Any]] | None = None,
        seed_tool_calls: Sequence[ToolCall] = (),
    ) -> ResponseT:
        """Run the conversation until a response is committed; see the module docstring.

        Args:
            request: binds the prompt's placeholders (``request.bind(prompt)``).
            tools: the tools of this execution, by name (keys equal the tools' names).
            seed_tool_calls: calls run before the first round, as if the model had made them.

        Raises:
            ExecutorError: the run failed (a subclass says how; ``.trace`` and ``.messages``
                show how far it got).
            ProviderError: a model call failed (``ProviderRetriesExhausted`` after retries).
            ExecutionSuspended: the suspend tool asked a person; ``run()`` reports this as
                a status instead.
        """
        response, _ = await self._execute(request, tools, seed_tool_calls)
        return response

    async def run(
        self,
        request: RequestT | None = None,
        tools: Mapping[str, ExecutorTool[Any]] | None = None,
        seed_tool_calls: Sequence[ToolCall] = (),
        *,
        suspension: Suspension | None = None,
        answers: Mapping[str, str] | None = None,
    ) -> ExecutionResult[ResponseT]:
        """Like ``execute``, reported the way ``Agent.run`` reports a turn.

        Returns an ``ExecutionResult``: ``completed`` with the response, or ``suspended``
        with the ``Suspension`` to resume, each with the trace and the usage. Resume by
        passing ``suspension`` and the ``answers`` (by call id) instead of a request.

        Args:
            request: as for ``execute`` (None when resuming).
            tools: as for ``execute`` (and for ``resume``).
            seed_tool_calls: as for ``execute`` (not when resuming).
            suspension: a suspended execution's ``Suspension`` to continue.
            answers: the person's answers to its pending calls, by call id.

        Raises:
            ExecutorConfigError: neither a request nor a suspension, or both.
            ExecutorError: as for ``execute``.
            ProviderError: as for ``execute``.
        """
        if (request is None) == (suspension is None) or (suspension and seed_tool_calls):
            raise ExecutorConfigError(
                "run() takes a request (with tools and seed calls), or a suspension and its "
                "answers to resume it, not both"
            )
        try:
            if suspension is not None:
                response, trace = await self._resume(suspension, answers or {}, tools)
            else:
                assert request is not None
                response, trace = await self._execute(request, tools, seed_tool_calls)
        except ExecutionSuspended as exc:
            return ExecutionResult(status="suspended", suspension=exc.suspension, trace=exc.trace)
        return ExecutionResult(status="completed", output=response, trace=trace)

    async def _execute(
        self,
        request: RequestT,
        tools: Mapping[str, ExecutorTool[Any]] | None,
        seed_tool_calls: Sequence[ToolCall],
    ) -> tuple[ResponseT, ExecutionTrace]:
        prompt_text, suffix, system = self._render(request)
        trace = ExecutionTrace(
            input_prompt=prompt_text if not suffix else f"{prompt_text}\n\n{suffix}",
            agent_name=self.name,
            metadata=self._metadata(),
        )
        outcomes = Outcomes()
        run = self._run(prompt_text, suffix, system, tools or {}, seed_tool_calls, trace, outcomes)
        return await self._finishing(run, trace, outcomes), trace

    async def _finishing(
        self, run: Awaitable[ResponseT], trace: ExecutionTrace, outcomes: Outcomes
    ) -> ResponseT:
        """Await ``run``; on every exit complete the trace, hand it over, record metrics.

        The provider's settings warnings are logged once per execution; the default
        temperature, which the caller never set, is dropped silently where it does not apply.
        """
        silence = [TEMPERATURE_DROPPED] if self.options.temperature is None else []
        try:
            with settings_warnings(silence=silence):
                response = await run
        except BaseException as exc:
            trace.finish(error=exc)
            if isinstance(exc, ExecutorError) and exc.trace is None:
                exc.trace = trace
            self._report(trace, outcomes, outcome_of(exc))
            raise
        trace.finish(result=response.model_dump(mode="json"))
        self._report(trace, outcomes, "committed" if outcomes.committed else "parsed")
        return response

    def _report(self, trace: ExecutionTrace, outcomes: Outcomes, outcome: str) -> None:
        record_trace(self.response_type, trace, self.tracer)
        base = {
            "gen_ai.provider.name": self.provider_label,
            "gen_ai.request.model": self.model.name,
        }
        if self.name:
            base["gen_ai.agent.name"] = self.name
        base.update(resource_labels(self.options.resource_labels) or {})
        try:
            record_metrics(trace, outcome, outcomes.interventions, base)
        except Exception:  # telemetry never breaks a run
            log.exception("recording executor metrics failed")

    def execute_sync(
        self,
        request: RequestT,
        tools: Mapping[str, ExecutorTool[Any]] | None = None,
        seed_tool_calls: Sequence[ToolCall] = (),
    ) -> ResponseT:
        """The blocking form of ``execute`` (not from inside a running event loop).

        Args:
            request: what to run on.
            tools: the tools of this run, by name.
            seed_tool_calls: calls run before the first model call.
        """
        return asyncio.run(self.execute(request, tools, seed_tool_calls))

    def _render(self, request: RequestT) -> tuple[str, str, str]:
        try:
            bound = request.bind(self.prompt)
        except Exception as exc:
            raise ExecutorError(f"failed to bind request to prompt: {exc}") from exc
        text = build(bound, "failed to build prompt")
        suffix = build(self.user_prompt_suffix, "failed to build user prompt suffix")
        system = build(self.system_instructions, "building system prompt")
        return text, suffix, system

    def _loop_tools(
        self,
        tools: Mapping[str, ExecutorTool[Any]],
        trace: ExecutionTrace,
        outcomes: Outcomes,
    ) -> list[Tool]:
        out: list[Tool] = []
        for key, tool in tools.items():
            if key != tool.definition.name:
                raise ExecutorConfigError(
                    f"tools[{key!r}] is named {tool.definition.name!r}: keys must equal names"
                )
            out.append(HandlerTool(tool, trace, outcomes))
        if self.suspend_tool is not None:
            name = self.suspend_tool.definition.name
            if name in tools:
                raise ExecutorConfigError(
                    f"suspend tool {name!r} collides with a caller-registered tool of the same name"
                )
            asker = HandlerTool(self.suspend_tool, trace, outcomes)
            asker.runs_last = True  # it sees the batch's other results; an answer goes on
            out.append(asker)
        submit = self.submit_tool
        if submit is not None and submit.name not in tools:
            out.append(
                SubmitLoopTool(self.response_type, submit, self.result_validators, trace, outcomes)
            )
        return sorted(out, key=lambda t: t.name)

    @property
    def model_settings(self) -> ModelSettings:
        """The settings of every model call (tool choice is set per call)."""
        o = self.options
        thinking = o.thinking_budget is not None
        temperature = o.temperature if o.temperature is not None else (None if thinking else 0.1)
        return ModelSettings(
            max_tokens=o.max_tokens,
            temperature=None if thinking else temperature,
            thinking="enabled" if thinking else None,
            reasoning_budget=o.thinking_budget,
            reasoning_effort=o.effort,
            caching=o.caching,
            cache_ttl=o.cache_ttl,
            # the rendered prompt is its own cache entry, shared by executions that differ
            # only in the suffix; the provider marks it on the first request only
            cache_first_user_block=o.caching
            and (self.user_prompt_suffix is not None or o.cache_first_user_block),
        )

    async def _run(
        self,
        prompt_text: str,
        suffix: str,
        system: str,
        tools: Mapping[str, ExecutorTool[Any]],
        seeds: Sequence[ToolCall],
        trace: ExecutionTrace,
        outcomes: Outcomes,
    ) -> ResponseT:
        loop_tools = self._loop_tools(tools, trace, outcomes)
        blocks = [TextBlock(text=prompt_text)] + ([TextBlock(text=suffix)] if suffix else [])
        history: list[Message] = [Message(role="user", content=tuple(blocks))]
        seeded = await run_seeds(seeds, loop_tools, history, trace, outcomes)
        if settled(outcomes, trace, history):
            return cast(ResponseT, outcomes.commit)
        control = self._control(tools, outcomes)
        start = continue_turn(history) if seeded else send_first(history[0])
        driver = Driver(
            self,
            system=system,
            tools=loop_tools,
            control=control,
            outcomes=outcomes,
            trace=trace,
            budget=self.options.max_rounds,
        )
        return cast(ResponseT, await driver.run(start))

    def _metadata(self) -> dict[str, Any]:
        """Telemetry labels of this executor's traces."""
        out: dict[str, Any] = {"provider_label": self.provider_label}
        labels = resource_labels(self.options.resource_labels)
        if labels is not None:
            out["resource_labels"] = labels
        return out

    @property
    def provider_label(self) -> str:
        """``options.provider_label``, else derived from the model's provider."""
        if self.options.provider_label is not None:
            return self.options.provider_label
        return {"google": "gcp.vertex_ai"}.get(self.model.provider, self.model.provider)

    @property
    def config_digest(self) -> str:
        """A digest of this executor's configuration; ``resume`` checks a suspension's."""
        submit = self.submit_tool.name if self.submit_tool is not None else ""
        suspend = self.suspend_tool.definition.name if self.suspend_tool is not None else ""
        return digest(
            repr(self.options), self.response_type.__qualname__, submit, suspend, self.model.name
        )

    async def resume(
        self,
        suspension: Suspension,
        answers: Mapping[str, str],
        tools: Mapping[str, ExecutorTool[Any]] | None = None,
    ) -> ResponseT:
        """Continue a suspended execution with the person's ``answers`` (by call id).

        Args:
            suspension: what ``ExecutionSuspended`` (or ``run()``) gave.
            answers: the person's answer to each pending call, by call id.
            tools: the tools of the execution, as given to ``execute``.

        Raises:
            ConfigDriftError: this executor's provider, model or configuration is not the
                suspended one's.
            ExecutorConfigError: an answer to a call that is not pending.
            ExecutionSuspended: the run suspended again.
        """
        response, _ = await self._resume(suspension, answers, tools)
        return response

    async def _resume(
        self,
        suspension: Suspension,
        answers: Mapping[str, str],
        tools: Mapping[str, ExecutorTool[Any]] | None,
    ) -> tuple[ResponseT, ExecutionTrace]:
        for what, mine, theirs in (
            ("provider", self.model.provider, suspension.provider),
            ("model", self.model.name, suspension.model),
            ("configuration", self.config_digest, suspension.config_digest),
        ):
            if mine != theirs:
                raise ConfigDriftError(
                    f"cannot resume: the {what} changed ({theirs!r} when suspended, now "
                    f"{mine!r}); resume with the executor that suspended"
                )
        pending = set(suspension.pending_call_ids)
        unknown = sorted(set(answers) - pending)
        if unknown:
            raise ExecutorConfigError(f"answers for calls that are not pending: {unknown}")
        results = {cid: frame_answer(text) for cid, text in answers.items()}
        trace = ExecutionTrace(agent_name=self.name, metadata={**self._metadata(), "resumed": True})
        outcomes = Outcomes()
        system = build(self.system_instructions, "building system prompt")
        loop_tools = self._loop_tools(tools or {}, trace, outcomes)
        control = self._control(tools or {}, outcomes)
        history, state = list(suspension.history), suspension.state

        def start(agent: Agent[str, None]) -> Awaitable[RunResult[str]]:
            return agent.run(tool_results=results, history=history, suspension=state)

        budget = min(suspension.remaining_rounds, self.options.max_rounds)
        carried = max(state.counters.budget_used, 0)
        driver = Driver(
            self,
            system=system,
            tools=loop_tools,
            control=control,
            outcomes=outcomes,
            trace=trace,
            budget=budget,
            carried=carried,
        )
        return await self._finishing(driver.run(start), trace, outcomes), trace

    def _control(self, tools: Mapping[str, Any], outcomes: Outcomes) -> Control:
        submit = self.submit_tool.name if self.submit_tool is not None else None
        gate = self.options.force_submit_defer_until
        control = Control(
            self.options, submit, gate is not None and gate in tools, outcomes.interventions
        )
        outcomes.control = control
        return control


# the highest temperature each provider accepts (others: 2.0, checked by ExecutorOptions)
_MAX_TEMPERATURE = {"anthropic": 1.0, "gcp.vertex_ai": 1.0, "aws.bedrock": 1.0}


def _check_temperature(options: ExecutorOptions, provider: str) -> None:
    top = _MAX_TEMPERATURE.get(provider, 2.0)
    t = options.temperature
    if t is not None and not 0.0 <= t <= top:
        raise ExecutorConfigError(
            f"temperature must be between 0.0 and {top} for {provider}, got {t}"
        )


def _with_retry(model: Model, policy: RetryPolicy) -> Model:
    """``model`` with ``policy`` for its calls: a shallow copy (same client), or refuse."""
    if not isinstance(getattr(model, "retry", None), RetryPolicy):
        raise ExecutorConfigError(
            f"ExecutorOptions.retry cannot be applied: {type(model).__name__} has no retry "
            "policy (no `retry` attribute holding a RetryPolicy). Leave options.retry unset "
            "and configure retries on the model itself"
        )
    clone = copy.copy(model)
    setattr(clone, "retry", policy)  # noqa: B010 - not part of the Model protocol
    return clone
