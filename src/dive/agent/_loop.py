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
from collections.abc import Sequence
from dataclasses import replace

from dive.agent._durable import checkpoint_step
from dive.agent._events import MessageEvent
from dive.agent._hooks import StopDecision
from dive.agent._modelcall import call_model
from dive.agent._output_check import COMPLETED, Retry, accept, check_submissions, text_output
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
from dive.errors import DiveError
from dive.llm import ModelRequest, ModelResponse, ModelSettings, TokenCounter, ToolChoice, Usage
from dive.messages import ContentBlock, Message, TextBlock, ToolCall
from dive.turns import IncompleteReason, Reminder, reminder_message
from dive.turns._engine import CallLedger, Completed, Ending, Incomplete, Suspended

__all__ = ["FINAL_ANSWER_TEXT", "run_loop", "unique_call_ids"]

FINAL_ANSWER_TEXT = "Your tool calls are complete. You must respond with a final answer now."
_NONE = ModelSettings(tool_choice=ToolChoice(type="none"))


def _incomplete(
    reason: IncompleteReason, calls: tuple[ToolCall, ...] = (), error_text: str | None = None
) -> Incomplete:
    return Incomplete(reason=reason, unrun=calls, error_text=error_text)


async def _pre_iteration(run: Run, settings: ModelSettings) -> ModelSettings:
    state = run.state
    out = await run.hook(
        "pre_iteration",
        messages=list(state.transcript.working),
        model_settings=settings,
        iteration=state.iterations,
    )
    state.transcript.set_system_prompt(out.changed["system_prompt"])
    state.transcript.replace_working(out.changed["messages"])
    state.transcript.queue_reminders(out.reminders)
    return out.changed["model_settings"] or settings


async def _stop_hooks(run: Run, active: bool) -> StopDecision | None:
    out = await run.hook(
        "stop", stop_hook_active=active, output_messages=list(run.state.transcript.record)
    )
    run.state.transcript.queue_reminders(out.reminders)
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


async def _final_answer(run: Run, stop_active: bool) -> tuple[Ending | None, bool]:
    """A final answer arrived: the output check, then ``stop`` hooks."""
    verdict = await text_output(run)
    if isinstance(verdict, Retry):
        return None, stop_active
    if verdict is not None:
        return verdict, stop_active
    if not run.config.hooks.stop:
        return COMPLETED, stop_active
    decision = await _stop_hooks(run, stop_active)
    if decision is None:
        return COMPLETED, stop_active
    state = run.state
    state.transcript.add(
        reminder_message(
            Reminder(
                name="stop-continuation",
                content=f"The following input arrived from the user: {decision.reason}",
            ),
            at=run.runner.now(),
        )
    )
    state.transcript.reappend_model_only()
    state.grant_fresh_budget()
    return None, True


async def _request(run: Run, last_allowed: bool) -> ModelRequest:
    """Resolve tools, apply the final-answer rule and ``pre_iteration``; build the request."""
    state = run.state
    limits = run.config.limits
    defs = (await resolve_tools(run) if run.config.toolsets else run.tools).definitions
    settings = run.setup.settings
    spec = run.config.output
    if spec.mode == "native" and spec.schema is not None:
        settings = settings.merge(
            ModelSettings(response_schema=spec.schema, response_schema_name=spec.schema_name)
        )
    config = run.config
    instructions = config.instructions
    if instructions.dynamic:
        text = await instructions.render(run.run_context())
        state.transcript.render_system_prompt(config.system_prompt(text))
    if last_allowed and limits.force_final_answer and defs:
        settings = settings.merge(_NONE)
    if run.config.hooks.pre_iteration:
        settings = await _pre_iteration(run, settings)
    if run.cancel is not None:
        run.check_soft_cancel()
    return ModelRequest(
        system=state.transcript.system_prompt,
        messages=tuple(state.transcript.working),
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
    if run.budgeted:
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
        verdict = await check_submissions(run, calls, group.results)
        if verdict is not None:
            return None if isinstance(verdict, Retry) else verdict
    if group is not None and group.ending:
        result = group.results.get(group.ending[0])
        if run.config.output.text and not run.output.accepted and result is not None:
            # a terminal call's result is the final output, once the validators accept it
            verdict = await accept(run, result.text)
            if verdict is not None:
                return None if isinstance(verdict, Retry) else verdict
        return COMPLETED
    if limits.force_final_answer and state.budget_used == limits.max_model_calls_per_turn - 1:
        final = TextBlock(text=FINAL_ANSWER_TEXT)
        state.transcript.add(Message(role="user", content=(final,), created_at=run.runner.now()))
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
    budgeted = run.budgeted
    while True:
        state.transcript.flush_reminders()
        if run.cancel is not None:
            run.check_soft_cancel()
        last_allowed = state.budget_used >= limits.max_model_calls_per_turn - 1
        if budgeted:
            for budget, used, _ in _budgets(run):
                if why := exceeded_before_call(budget, used):
                    return _incomplete("usage_limit", error_text=why)
        request = await _request(run, last_allowed)
        if budgeted and (why := await _precount(run, request)):
            return _incomplete("usage_limit", error_text=why)
        response, calls = await _respond(run, request)
        if response.stop_kind == "pause" and not calls:
            pauses += 1
            if pauses > limits.max_pause_continuations:
                state.count_model_call()
                state.transcript.drop_unanswered_server_calls()
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
