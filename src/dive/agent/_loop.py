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

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime

from dive.agent._durable import checkpoint_step
from dive.agent._events import MessageEvent
from dive.agent._hooks import StopDecision, run_hooks
from dive.agent._modelcall import call_model
from dive.agent._resume import resume_group
from dive.agent._run import Run
from dive.agent._toolbatch import run_batch
from dive.agent._tools import resolve_tools
from dive.errors import OutputValidationError
from dive.llm import ModelRequest, ModelResponse, ModelSettings, ToolChoice
from dive.messages import ContentBlock, Message, ToolCall, ToolResult
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
        created_at=datetime.now(UTC),
    )


def _ask_for_output(run: Run) -> Ending | None:
    """A final answer arrived without the structured output: remind, or give up."""
    tool = run.config.output_tool
    assert tool is not None
    failures = run.state.count_output_failure()
    if failures > run.config.output_retries:
        err = OutputValidationError(
            f"the model answered without calling {tool.name} {failures} time(s)"
        )
        return Incomplete(reason="error", error=err)
    run.state.add(
        reminder_message(
            Reminder(
                name="output-required",
                content=f"Respond by calling the {tool.name} tool with your final answer; a "
                "plain text answer is not accepted.",
            )
        )
    )
    return None


async def _final_answer(run: Run, stop_active: bool) -> tuple[Ending | None, bool]:
    """A final answer arrived: structured-output check, then ``stop`` hooks."""
    config = run.config
    if config.output_tool is not None and run.state.output is None:
        return _ask_for_output(run), stop_active
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
            )
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


async def _respond(run: Run, last_allowed: bool) -> tuple[ModelResponse, tuple[ToolCall, ...]]:
    """One model call; its message is recorded and every call it makes announced."""
    state = run.state
    request = await _request(run, last_allowed)
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


async def _tools_step(run: Run, calls: tuple[ToolCall, ...], last_allowed: bool) -> Ending | None:
    """Run the calls of a response, unless a per-turn limit forbids it."""
    state = run.state
    limits = run.config.limits
    if last_allowed:
        return _incomplete("iteration_limit", calls)
    cap = limits.max_tool_calls_per_turn
    if cap is not None and state.calls.executed + len(calls) > cap:
        return _incomplete("iteration_limit", calls)
    if run.setup.durable:
        await checkpoint_step(run, "running the response's tool calls")
    batch = await run_batch(run, calls)
    if state.calls.waiting:
        return Suspended(new=True)
    group = state.close_group()
    if run.config.output_tool is not None and group is not None:
        ending = _check_output(run, calls, group.results)
        if ending is not None:
            return ending
    if batch.terminal:
        return _COMPLETED
    if limits.force_final_answer and state.budget_used == limits.max_model_calls_per_turn - 1:
        state.add(Message.user(FINAL_ANSWER_TEXT))
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
    elif run.setup.durable:
        await checkpoint_step(run, "the first model call")
    while True:
        state.flush_reminders()
        run.check_soft_cancel()
        last_allowed = state.budget_used >= limits.max_model_calls_per_turn - 1
        response, calls = await _respond(run, last_allowed)
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


def _check_output(
    run: Run, calls: tuple[ToolCall, ...], results: Mapping[str, ToolResult]
) -> Ending | None:
    """Accept a valid ``submit_result`` call; give up after ``output_retries`` failures."""
    tool = run.config.output_tool
    assert tool is not None
    for c in calls:
        res = results.get(c.id)
        if c.name != tool.name or res is None:
            continue
        if not res.is_error:
            value, err = tool.validate(c.arguments)
            if err is None:
                run.state.set_output(value)
                return _COMPLETED
        failures = run.state.count_output_failure()
        if failures > run.config.output_retries:
            err = OutputValidationError(
                f"structured output did not validate after {failures} attempt(s): {res.text}",
                errors=(res.text,),
            )
            return Incomplete(reason="error", error=err)
    return None
