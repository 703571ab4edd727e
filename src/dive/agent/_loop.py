"""The model loop: resolve tools → ``pre_iteration`` → model call → act on the stop reason.

Each step returns an ``Ending`` (completed, suspended, or incomplete with a model-stop
reason) or None to go on, and lets exceptions propagate for error reasons; the caller turns
both into the one turn ending. Tool calls run only on a normal finish or a tool-use stop.
Output and context limits, refusals, provider stops and unknown stops with calls run nothing
(fail closed).

Counts are the turn's, across suspensions: ``max_model_calls_per_turn`` counts model calls
since the last fresh budget (a ``stop`` continuation or ``continue_turn`` grants one), and
``pre_iteration`` sees the zero-based number of every model call of the turn.

Call ids are unique within a turn: a response that repeats an id (inside itself, or one of
an earlier call of the turn) has the repeat re-keyed ``<id>_2``, ``<id>_3``, … before
anything runs, so the record, the events and later requests all carry the new id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from dive.agent._durable import checkpoint_step
from dive.agent._events import MessageEvent
from dive.agent._hooks import StopDecision, run_hooks
from dive.agent._modelcall import call_model
from dive.agent._result import answer_text
from dive.agent._resume import resume_group
from dive.agent._run import Run
from dive.agent._runner import ModelCall
from dive.agent._toolbatch import run_batch
from dive.agent._tools import resolve_tools
from dive.agent._usage_limits import (
    UsageLimits,
    exceeded_after_response,
    exceeded_before_call,
    exceeded_by_calls,
    exceeded_by_request,
)
from dive.errors import DiveError, OutputValidationError
from dive.llm import ModelRequest, ModelResponse, ModelSettings, TokenCounter, ToolChoice, Usage
from dive.messages import ContentBlock, Message, TextBlock, ToolCall, ToolResult
from dive.turns import (
    CallLedger,
    Completed,
    Ending,
    Incomplete,
    IncompleteReason,
    Reminder,
    Suspended,
    reminder_message,
)

__all__ = ["FINAL_ANSWER_TEXT", "run_loop", "unique_call_ids"]

FINAL_ANSWER_TEXT = "Your tool calls are complete. You must respond with a final answer now."
_NONE = ModelSettings(tool_choice=ToolChoice(type="none"))
_COMPLETED = Completed()
_RETRY: Any = Incomplete(reason="error")  # marker: an output was rejected, ask again


def _incomplete(
    reason: IncompleteReason, calls: tuple[ToolCall, ...] = (), error_text: str | None = None
) -> Incomplete:
    return Incomplete(reason=reason, unrun=calls, error_text=error_text)


async def _pre_iteration(run: Run, settings: ModelSettings) -> ModelSettings:
    state = run.state
    ctx = run.hook_context("pre_iteration")
    ctx.messages = list(state.working)
    ctx.model_settings = settings
    ctx.iteration = state.iterations
    await run_hooks("pre_iteration", run.config.hooks.pre_iteration, ctx, run.config.log)
    state.set_system_prompt(ctx.system_prompt)
    state.replace_working(ctx.messages)
    state.queue_reminders(ctx.take_reminders())
    return ctx.model_settings or settings


async def _stop_hooks(run: Run, active: bool) -> StopDecision | None:
    ctx = run.hook_context("stop")
    ctx.stop_hook_active = active
    ctx.output_messages = list(run.state.record)
    out = await run_hooks("stop", run.config.hooks.stop, ctx, run.config.log)
    run.state.queue_reminders(ctx.take_reminders())
    for value in out.returned:
        if isinstance(value, StopDecision) and value.continue_:
            return value
    return None


def unique_call_ids(
    content: tuple[ContentBlock, ...], ledger: CallLedger
) -> tuple[ContentBlock, ...]:
    """``content`` with every call id unique within the message and the turn."""
    seen: set[str] = set()
    out: list[ContentBlock] | None = None
    for i, b in enumerate(content):
        if not isinstance(b, ToolCall):
            continue
        if b.id not in seen and b.id not in ledger:
            seen.add(b.id)
            continue
        k = 2
        while f"{b.id}_{k}" in seen or f"{b.id}_{k}" in ledger:
            k += 1
        new_id = f"{b.id}_{k}"
        seen.add(new_id)
        if out is None:
            out = list(content)
        out[i] = replace(b, id=new_id)
    return content if out is None else tuple(out)


def _assistant_message(run: Run, response: ModelResponse) -> Message:
    content = response.content
    if response.stop_kind in ("output_limit", "context_limit"):
        content = tuple(
            b for b in content if not (isinstance(b, ToolCall) and b.raw_arguments is not None)
        )
    return Message(
        role="assistant",
        content=unique_call_ids(content, run.state.calls),
        provider_state=response.provider_state,
        created_at=run.runner.now(),
    )


def _retry_output(run: Run, message: str, what: str, *, told: bool = False) -> Ending | None:
    """An output attempt failed: tell the model, or give up after ``output_retries``.

    ``told``: the model already saw ``message`` (in a tool result), so no reminder is added.
    """
    failures = run.state.count_output_failure()
    if failures > run.config.output_retries:
        err = OutputValidationError(
            f"the output was not accepted after {failures} attempt(s): {what}",
            errors=(message,),
        )
        return Incomplete(reason="error", error=err)
    if not told:
        reminder = Reminder(name="output-retry", content=message)
        run.state.add(reminder_message(reminder, at=run.runner.now()))
    return None


async def _accept(run: Run, value: Any, what: str) -> Ending | None:
    """Run the output validators on a schema-valid value; accept it or ask again."""
    value, retry = await run.config.output.check(run.run_context(), value)
    if retry is not None:
        return _retry_output(run, retry, what) or _RETRY
    run.state.set_output(value)
    return None


async def _text_output(run: Run) -> Ending | None:
    """A final text answer: the output itself, or JSON of it (native and prompted modes)."""
    spec = run.config.output
    if spec.tools and not run.state.has_output:
        names = " or ".join(t.name for t in spec.tools)
        return _retry_output(
            run,
            f"Respond by calling the {names} tool with your final answer; a plain text "
            "answer is not accepted.",
            f"the model answered without calling {names}",
        )
    if spec.tools:
        return None
    value, problem = spec.parse_text(answer_text(run.state.record))
    if problem is not None:
        return _retry_output(run, problem, problem)
    ending = await _accept(run, value, "an output validator asked for a retry")
    return None if ending is _RETRY else ending


async def _final_answer(run: Run, stop_active: bool) -> tuple[Ending | None, bool]:
    """A final answer arrived: the output check, then ``stop`` hooks."""
    config = run.config
    before = run.state.output_failures
    ending = await _text_output(run)
    if ending is not None or run.state.output_failures > before:
        return ending, stop_active
    if not config.hooks.stop:
        return _COMPLETED, stop_active
    decision = await _stop_hooks(run, stop_active)
    if decision is None:
        return _COMPLETED, stop_active
    state = run.state
    state.add(
        reminder_message(
            Reminder(
                name="stop-continuation",
                content=f"The following input arrived from the user: {decision.reason}",
            ),
            at=run.runner.now(),
        )
    )
    state.reappend_model_only()
    state.grant_fresh_budget()
    return None, True


async def _request(run: Run, last_allowed: bool) -> ModelRequest:
    """Resolve tools, apply the final-answer rule and ``pre_iteration``; build the request."""
    state = run.state
    limits = run.config.limits
    defs = (await resolve_tools(run)).definitions
    settings = run.setup.settings
    spec = run.config.output
    if spec.mode == "native" and spec.schema is not None:
        settings = settings.merge(
            ModelSettings(response_schema=spec.schema, response_schema_name=spec.schema_name)
        )
    instructions = run.setup.agent.instructions
    if instructions.dynamic:
        text = await instructions.render(run.run_context())
        state.render_system_prompt(run.setup.agent.system_prompt(text))
    if last_allowed and limits.force_final_answer and defs:
        settings = settings.merge(_NONE)
    if run.config.hooks.pre_iteration:
        settings = await _pre_iteration(run, settings)
    run.check_soft_cancel()
    return ModelRequest(
        system=state.system_prompt,
        messages=tuple(state.working),
        tools=defs,
        settings=settings,
        prompt_cache_key=run.setup.prompt_cache_key,
    )


async def _precount(run: Run, request: ModelRequest) -> str | None:
    """Why ``request`` may not be sent under a ``count_tokens_first`` budget, or None."""
    config, model = run.config, run.setup.model
    turn, session = config.usage_limits, config.session_usage_limits
    if not (turn is not None and turn.count_tokens_first) and not (
        session is not None and session.count_tokens_first
    ):
        return None  # the common case: nothing to count, nothing built
    budgets = [b for b in _budgets(run) if b[0].count_tokens_first]
    if not budgets or not isinstance(model, TokenCounter):
        return None
    try:
        counted = await run.runner.count_tokens(
            ModelCall(ref=run.ref(), model=model, request=request)
        )
    except DiveError as exc:  # counting is a courtesy: the limit is still checked after
        run.config.log.warning("counting the request's tokens failed (%s); sending it", exc)
        return None
    for limits, used, _ in budgets:
        if why := exceeded_by_request(limits, used, counted):
            return why
    return None


async def _respond(run: Run, request: ModelRequest) -> tuple[ModelResponse, tuple[ToolCall, ...]]:
    """One model call; its message is recorded and every call it makes announced."""
    state = run.state
    iteration = state.iterations
    state.count_iteration()
    response = await call_model(run, request, iteration)
    state.add_usage(response.usage)
    message = _assistant_message(run, response)
    calls = state.add_response(message, run.tools.definition_of)
    await run.events.emit(MessageEvent(message=message, usage=response.usage))
    return response, calls


def _stop_ending(run: Run, response: ModelResponse, calls: tuple[ToolCall, ...]) -> Ending | None:
    """The ending a stop reason forces (fail closed), or None when calls may run."""
    kind = response.stop_kind
    if kind in ("output_limit", "context_limit"):
        return _incomplete(kind, calls)
    if kind == "refusal":
        return Completed(unrun=calls)
    if kind in ("incomplete", "pause") or (kind == "other" and calls):
        return _incomplete("provider_stopped", calls, error_text=response.stop_reason or "none")
    return None


def _budgets(run: Run) -> list[tuple[UsageLimits, Usage, Counter[str]]]:
    """Each budget that applies (the turn's, the session's) with what it has used."""
    config, state = run.config, run.state
    if config.usage_limits is None and config.session_usage_limits is None:
        return []
    # this response's calls are announced (not started); earlier ones ran or were tried
    calls = Counter(r.name for r in state.calls.records() if r.state != "not_started")
    out: list[tuple[UsageLimits, Usage, Counter[str]]] = []
    if config.usage_limits is not None:
        out.append((config.usage_limits, state.turn_usage, calls))
    spent = run.setup.session_spent
    if config.session_usage_limits is not None and spent is not None:
        usage, before = spent.excluding(state.turn_id)
        out.append((config.session_usage_limits, usage + state.turn_usage, before + calls))
    return out


def _budget_for_calls(run: Run, calls: tuple[ToolCall, ...]) -> Ending | None:
    """``usage_limit`` when the response used up a budget or its calls would pass one."""
    for limits, used, started in _budgets(run):
        why = exceeded_after_response(limits, used) or exceeded_by_calls(limits, started, calls)
        if why:
            return _incomplete("usage_limit", calls, error_text=why)
    return None


async def _tools_step(run: Run, calls: tuple[ToolCall, ...], last_allowed: bool) -> Ending | None:
    """Run the calls of a response, unless a per-turn limit forbids it."""
    state = run.state
    limits = run.config.limits
    if last_allowed:
        return _incomplete("iteration_limit", calls)
    cap = limits.max_tool_calls_per_turn
    if cap is not None and state.calls.executed + len(calls) > cap:
        return _incomplete("iteration_limit", calls)
    budget = _budget_for_calls(run, calls)
    if budget is not None:
        return budget
    if run.setup.durable:
        await checkpoint_step(run, "running the response's tool calls")
    await run_batch(run, calls)
    if state.calls.waiting:
        return Suspended(new=True)
    return await _after_batch(run, calls)


async def _after_batch(run: Run, calls: Sequence[ToolCall]) -> Ending | None:
    """Close a finished batch's group: the output check, a terminal ending, the last call.

    The same for a batch run now and one finished by a resume.
    """
    state = run.state
    limits = run.config.limits
    group = state.close_group()
    if run.config.output.tools and group is not None:
        ending = await _check_output(run, calls, group.results)
        if ending is _RETRY:
            return None
        if ending is not None:
            return ending
    if group is not None and group.ending:
        result = group.results.get(group.ending[0])
        if run.config.output.text and not state.has_output and result is not None:
            # a terminal call's result is the final output, once the validators accept it
            ending = await _accept(run, result.text, "an output validator asked for a retry")
            if ending is not None:
                return None if ending is _RETRY else ending
        return _COMPLETED
    if limits.force_final_answer and state.budget_used == limits.max_model_calls_per_turn - 1:
        final = TextBlock(text=FINAL_ANSWER_TEXT)
        state.add(Message(role="user", content=(final,), created_at=run.runner.now()))
    return None


async def run_loop(run: Run) -> Ending:
    """Drive model calls and tool batches until the turn ends."""
    state = run.state
    limits = run.config.limits
    pauses = 0
    stop_active = False
    plan = run.setup.resume
    if plan is not None:
        ended = await resume_group(run, plan)
        if ended is not None:
            return ended
        ended = await _after_batch(run, plan.calls)
        if ended is not None:
            return ended
    elif run.setup.durable:
        await checkpoint_step(run, "the first model call")
    while True:
        state.flush_reminders()
        run.check_soft_cancel()
        last_allowed = state.budget_used >= limits.max_model_calls_per_turn - 1
        for budget, used, _ in _budgets(run):
            if why := exceeded_before_call(budget, used):
                return _incomplete("usage_limit", error_text=why)
        request = await _request(run, last_allowed)
        if why := await _precount(run, request):
            return _incomplete("usage_limit", error_text=why)
        response, calls = await _respond(run, request)
        if response.stop_kind == "pause" and not calls:
            pauses += 1
            if pauses > limits.max_pause_continuations:
                state.count_model_call()
                state.drop_unanswered_server_calls()
                return _incomplete("pause")
            continue
        pauses = 0
        state.count_model_call()
        ending = _stop_ending(run, response, calls)
        if ending is not None:
            return ending
        if not calls:
            ending, stop_active = await _final_answer(run, stop_active)
        else:
            ending = await _tools_step(run, calls, last_allowed)
        if ending is not None:
            return ending


async def _check_output(
    run: Run, calls: Sequence[ToolCall], results: Mapping[str, ToolResult]
) -> Ending | None:
    """Accept the first valid submit call (validators included), or count the failures.

    Returns ``_RETRY`` when a submission was rejected and the model is asked again.
    """
    spec = run.config.output
    rejected = False
    for c in calls:
        tool = spec.tool_named(c.name)
        res = results.get(c.id)
        if tool is None or res is None or run.state.has_output:
            continue
        if not res.is_error:
            value, err = tool.validate(c.arguments)
            if err is None:
                ending = await _accept(run, value, "an output validator asked for a retry")
                if ending is _RETRY:
                    rejected = True
                    continue
                return ending if ending is not None else _COMPLETED
        ending = _retry_output(
            run, res.text, f"structured output did not validate: {res.text}", told=True
        )
        if ending is not None:
            return ending
        rejected = True
    return _RETRY if rejected and not run.state.has_output else None
