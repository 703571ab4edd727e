"""The model loop: resolve tools → ``pre_iteration`` → model call → act on the stop reason.

It returns an :class:`Ending` (completed, or incomplete with a model-stop reason) and lets
exceptions propagate for error reasons; the caller turns both into the one turn ending.
Tool calls run only on a normal finish or a tool-use stop. Output and context limits, refusals,
provider stops and unknown stops with calls run nothing (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from dive.agent._durable import checkpoint_step
from dive.agent._events import MessageEvent
from dive.agent._hooks import StopDecision, call_hook
from dive.agent._modelcall import call_model
from dive.agent._records import IncompleteReason
from dive.agent._reminders import Reminder, reminder_message
from dive.agent._run import TurnRun
from dive.agent._toolbatch import run_batch
from dive.agent._tools import resolve_tools
from dive.errors import HookAbort, OutputValidationError
from dive.llm import ModelRequest, ModelResponse, ModelSettings, ToolChoice
from dive.messages import Message, ServerToolCall, ServerToolResult, ToolCall, ToolResult

__all__ = ["FINAL_ANSWER_TEXT", "Ending", "run_loop"]

FINAL_ANSWER_TEXT = "Your tool calls are complete. You must respond with a final answer now."
_NONE = ModelSettings(tool_choice=ToolChoice(type="none"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Ending:
    """How the loop ended without an exception."""

    status: str  # "completed", "suspended" or "incomplete"
    reason: IncompleteReason | None = None
    error: BaseException | None = None
    error_text: str | None = None
    pending_calls: tuple[ToolCall, ...] = ()


_COMPLETED = Ending(status="completed")


def _incomplete(
    reason: IncompleteReason, calls: tuple[ToolCall, ...] = (), error_text: str | None = None
) -> Ending:
    return Ending(status="incomplete", reason=reason, pending_calls=calls, error_text=error_text)


async def _pre_iteration(run: TurnRun, settings: ModelSettings, iteration: int) -> ModelSettings:
    ctx = run.hook_context("pre_iteration")
    ctx.messages = list(run.working)
    ctx.model_settings = settings
    ctx.iteration = iteration
    for hook in run.agent.hooks.pre_iteration:
        try:
            await call_hook(hook, ctx)
        except HookAbort as exc:
            exc.hook = "pre_iteration"
            raise
    run.system_prompt = ctx.system_prompt
    run.working = list(ctx.messages)
    run.take_hook_reminders(ctx)
    return ctx.model_settings or settings


async def _stop_hooks(run: TurnRun, active: bool) -> StopDecision | None:
    ctx = run.hook_context("stop")
    ctx.stop_hook_active = active
    ctx.output_messages = list(run.record)
    decision: StopDecision | None = None
    for hook in run.agent.hooks.stop:
        try:
            out = await call_hook(hook, ctx)
        except HookAbort as exc:
            exc.hook = "stop"
            raise
        except Exception:
            run.agent.log.exception("stop hook failed")
            continue
        if decision is None and isinstance(out, StopDecision) and out.continue_:
            decision = out
    run.take_hook_reminders(ctx)
    return decision


def _assistant_message(run: TurnRun, response: ModelResponse) -> Message:
    content = response.content
    if response.stop_kind in ("output_limit", "context_limit"):
        content = tuple(
            b for b in content if not (isinstance(b, ToolCall) and b.raw_arguments is not None)
        )
    return Message(
        role="assistant",
        content=content,
        provider_state=response.provider_state,
        created_at=datetime.now(UTC),
    )


def _drop_trailing_server_call(run: TurnRun) -> None:
    """After giving up on a pause: drop unanswered server tool calls of the paused messages."""
    start = len(run.record)
    while start > 0 and run.record[start - 1].role == "assistant":
        start -= 1
    tail = run.record[start:]
    answered = {b.tool_use_id for m in tail for b in m.content if isinstance(b, ServerToolResult)}
    rebuilt: list[Message] = []
    for m in tail:
        kept = tuple(
            b for b in m.content if not (isinstance(b, ServerToolCall) and b.id not in answered)
        )
        if kept:
            rebuilt.append(m if kept == m.content else replace(m, content=kept))
    if [id(m) for m in rebuilt] == [id(m) for m in tail]:
        return
    del run.record[start:]
    run.working = [m for m in run.working if not any(m is t for t in tail)]
    for m in rebuilt:
        run.add(m)


async def _no_calls_answer(run: TurnRun, stop_active: bool) -> tuple[Ending | None, bool]:
    """A final answer arrived: structured-output check, then ``stop`` hooks."""
    agent = run.agent
    if agent.output_tool is not None and run.output is None:
        run.output_failures += 1
        if run.output_failures > agent.output_retries:
            err = OutputValidationError(
                f"the model answered without calling {agent.output_tool.name} "
                f"{run.output_failures} time(s)"
            )
            return Ending(status="incomplete", reason="error", error=err), stop_active
        run.add(
            reminder_message(
                Reminder(
                    name="output-required",
                    content=f"Respond by calling the {agent.output_tool.name} tool with your "
                    "final answer; a plain text answer is not accepted.",
                )
            )
        )
        return None, stop_active
    if not agent.hooks.stop:
        return _COMPLETED, stop_active
    decision = await _stop_hooks(run, stop_active)
    if decision is None:
        return _COMPLETED, stop_active
    run.add(
        reminder_message(
            Reminder(
                name="stop-continuation",
                content=f"The following input arrived from the user: {decision.reason}",
            )
        )
    )
    for m in run.model_only:
        run.working.append(m)
    run.budget_base = run.model_calls
    return None, True


async def run_loop(run: TurnRun) -> Ending:
    """Drive model calls and tool batches until the turn ends."""
    agent = run.agent
    limits = agent.limits
    pauses = 0
    iteration = 0
    stop_active = False
    if run.resume is not None:
        from dive.agent._resume import resume_batch

        ended = await resume_batch(run, run.resume)
        if ended is not None:
            return ended
    else:
        if run.durable:
            await checkpoint_step(run, "the first model call")
    while True:
        run.flush_reminders()
        run.check_soft_cancel()
        defs = await resolve_tools(run)
        used = run.model_calls - run.budget_base
        last_allowed = used >= limits.max_model_calls_per_turn - 1
        settings = run.settings
        if last_allowed and limits.force_final_answer and defs:
            settings = settings.merge(_NONE)
        if agent.hooks.pre_iteration:
            settings = await _pre_iteration(run, settings, iteration)
        run.check_soft_cancel()
        request = ModelRequest(
            system=run.system_prompt,
            messages=tuple(run.working),
            tools=defs,
            settings=settings,
            prompt_cache_key=run.prompt_cache_key,
        )
        response = await call_model(run, request, iteration)
        run.accumulator = None
        iteration += 1
        run.last_response = response
        run.add_usage(response.usage)
        kind = response.stop_kind
        message = _assistant_message(run, response)
        if message.content:
            run.add(message)
        await run.emit(MessageEvent(message=message, usage=response.usage))
        calls = message.tool_calls
        raw = response.stop_reason or "none"
        if kind == "pause" and not calls:
            pauses += 1
            if pauses > limits.max_pause_continuations:
                run.model_calls += 1
                _drop_trailing_server_call(run)
                return _incomplete("pause")
            continue
        pauses = 0
        run.model_calls += 1
        if kind in ("output_limit", "context_limit"):
            return _incomplete(kind, calls)
        if kind == "refusal":
            return Ending(status="completed", pending_calls=calls)
        if kind in ("incomplete", "pause") or (kind == "other" and calls):
            return _incomplete("provider_stopped", calls, error_text=raw)
        if not calls:
            ending, stop_active = await _no_calls_answer(run, stop_active)
            if ending is not None:
                return ending
            continue
        if last_allowed:
            return _incomplete("iteration_limit", calls)
        cap = limits.max_tool_calls_per_turn
        if cap is not None and run.executed_tool_calls + len(calls) > cap:
            return _incomplete("iteration_limit", calls)
        if run.durable:
            await checkpoint_step(run, "running the response's tool calls")
        batch = await run_batch(run, calls)
        if batch.pending:
            from dive.agent._resume import suspend

            return suspend(run, batch, new=True)
        for m in batch.messages():
            run.add(m)
        run.batch = None
        if agent.output_tool is not None:
            ending = _check_output(run, calls, batch.results)
            if ending is not None:
                return ending
        if batch.terminal:
            return _COMPLETED
        if (
            limits.force_final_answer
            and run.model_calls - run.budget_base == limits.max_model_calls_per_turn - 1
        ):
            run.add(Message.user(FINAL_ANSWER_TEXT))


def _check_output(
    run: TurnRun, calls: tuple[ToolCall, ...], results: Mapping[str, ToolResult]
) -> Ending | None:
    """Accept a valid ``submit_result`` call; give up after ``output_retries`` failures."""
    tool = run.agent.output_tool
    assert tool is not None
    for c in calls:
        res = results.get(c.id)
        if c.name != tool.name or res is None:
            continue
        if not res.is_error:
            value, err = tool.validate(c.arguments)
            if err is None:
                run.output = value
                return _COMPLETED
        run.output_failures += 1
        if run.output_failures > run.agent.output_retries:
            err = OutputValidationError(
                f"structured output did not validate after {run.output_failures} "
                f"attempt(s): {res.text}",
                errors=(res.text,),
            )
            return Ending(status="incomplete", reason="error", error=err)
    return None
