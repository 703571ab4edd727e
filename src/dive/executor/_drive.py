"""Driving one execute: loop turns until a response is committed or parsed.

Each loop turn runs on a fresh ``Agent`` (the executor's settings, tools and hooks, the
caller's tracer beside the ``RoundRecorder``). When a turn ends without a commit the driver
decides the next one, statelessly, from the turn's history: a redirect to the submit tool, a
parse repair in text mode, a continuation after an output-limit cut-off or an interrupted
stream, or an error. Every model call but a pause resend counts against the round budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from dive.agent import Agent, Hooks, Limits, RunResult
from dive.errors import ProviderError
from dive.executor._calls import RejectedCalls
from dive.executor._control import Control
from dive.executor._errors import (
    ExecutorError,
    ExecutorIncomplete,
    ExecutorRefused,
    MaxRoundsExceeded,
    ProviderRetriesExhausted,
    ResponseParseError,
)
from dive.executor._outcomes import Outcomes
from dive.executor._rounds import RoundRecorder, trace_unknown_calls
from dive.executor._steps import (
    OUTPUT_LIMIT_TEXT,
    REDIRECT_TEXT,
    REPAIR_TEXT,
    Call,
    continue_turn,
    send,
    settled,
)
from dive.executor._submit import SubmissionContext, run_validators
from dive.executor._submit_tool import SubmitLoopTool
from dive.executor._suspend import ExecutionSuspended, Suspension
from dive.executor._text import candidates
from dive.executor._trace import ExecutionTrace
from dive.executor._tracers import span_tracer
from dive.messages import Message, TextBlock
from dive.tools import Tool
from dive.tracing import MultiTracer

if TYPE_CHECKING:
    from dive.executor._executor import Executor

__all__ = ["Driver"]


class Driver:
    """The loop turns of one execute (see the module docstring).

    Args:
        ex: the executor.
        system: the built system prompt.
        tools: the loop tools of this execute.
        control: its per-round tool choice and nudge.
        outcomes: its commits and aborts.
        trace: its trace.
        budget: the rounds it may use.
        carried: model calls a resumed turn already charged to its own budget.
    """

    def __init__(
        self,
        ex: Executor[Any, Any],
        *,
        system: str,
        tools: list[Tool],
        control: Control,
        outcomes: Outcomes,
        trace: ExecutionTrace,
        budget: int,
        carried: int = 0,
    ) -> None:
        self.ex = ex
        self.system = system
        self.tools = tools
        self.control = control
        self.outcomes = outcomes
        self.trace = trace
        self.budget = budget
        self.carried = carried
        self.recorder = RoundRecorder(trace, ex.model, capture=ex.options.capture_payloads)
        control.recorder, control.limit = self.recorder, budget
        self.history: list[Message] = []

    @property
    def rounds(self) -> int:
        """Rounds of the budget used so far."""
        return self.recorder.charged(0)

    def _exceeded(self) -> MaxRoundsExceeded:
        n = self.ex.options.max_rounds
        return MaxRoundsExceeded(
            f"agent exceeded maximum conversation rounds ({n})",
            trace=self.trace,
            messages=self.history,
        )

    async def run(self, start: Call) -> Any:
        """Run loop turns from ``start`` until a response is committed or parsed."""
        cutoffs, repairs, interrupted = 0, 0, False
        call: Call = start
        while True:
            remaining = self.budget - self.rounds
            if remaining <= 0:
                raise self._exceeded()
            # one call more than the budget: the executor stops it (a submission on the last
            # round must run, which the loop refuses on its own last allowed call)
            agent = self._agent(remaining + self.carried + 1)
            self.carried = 0
            result = await call(agent)
            self.history = result.all_messages()
            trace_unknown_calls(self.recorder, result)
            if settled(self.outcomes, self.trace, self.history):
                return self.outcomes.commit
            if result.status == "suspended":
                if await self._submitted_instead(result):
                    return self.outcomes.commit
                raise self._suspended(result)
            if result.status == "incomplete":
                reason = result.outcome.reason if result.outcome is not None else ""
                if reason == "stream_interrupted" and not interrupted:
                    interrupted = True  # once: nothing re-runs, the model sees the history
                    call = continue_turn(self.history)
                    continue
                interrupted = False
                cutoffs = self._incomplete(result, cutoffs)
                self.outcomes.interventions.append("output_limit_continue")
                text = OUTPUT_LIMIT_TEXT.format(n=self.ex.options.max_tokens)
                call = send(Message.user(text), self.history)
                continue
            cutoffs, interrupted = 0, False
            self._raise_if_refused(result)
            submit = self.ex.submit_tool
            if submit is not None:
                call = send(Message.user(REDIRECT_TEXT.format(name=submit.name)), self.history)
                self.control.force_next()
                self.outcomes.interventions.append("submit_redirect")
                continue
            response, problem = await self._parse(result)
            if response is not None:
                return response
            repairs += 1
            if repairs > 2:
                raise ResponseParseError(
                    f"failed to parse response: {problem}", trace=self.trace, messages=self.history
                )
            self.outcomes.interventions.append("parse_repair")
            call = send(Message.user(REPAIR_TEXT.format(reason=problem)), self.history)

    def _agent(self, remaining: int) -> Agent[str, None]:
        ex = self.ex
        submit = ex.submit_tool.name if ex.submit_tool is not None else None
        rejected = RejectedCalls(self.trace, self.outcomes, submit)
        return Agent(
            model=ex.model,
            instructions=self.system,
            tools=self.tools,
            name=ex.name,
            model_settings=ex.model_settings,
            limits=Limits(
                max_model_calls_per_turn=remaining, force_final_answer=False, response_timeout=None
            ),
            parallel_tool_execution=ex.options.tool_call_concurrency > 1,
            max_tool_concurrency=ex.options.tool_call_concurrency,
            prime_reminders=False,
            hooks=Hooks(pre_iteration=[self.control.before_call], post_tool_use_failure=[rejected]),
            tracer=MultiTracer(self.recorder, ex.tracer, span_tracer(ex.response_type)),
        )

    def _incomplete(self, result: RunResult[Any], cutoffs: int) -> int:
        """An incomplete turn: the number of cut-offs in a row, or raise."""
        outcome = result.outcome
        reason = outcome.reason if outcome is not None else "unknown"
        trace, history = self.trace, self.history
        if reason == "stream_interrupted":  # the second in a row (the first was continued)
            raise ExecutorIncomplete(
                f"the response stream was interrupted twice in a row: {result.error}",
                reason="stream_interrupted",
                trace=trace,
                messages=history,
            )
        if reason == "output_limit" and cutoffs < 2:
            return cutoffs + 1
        if reason == "iteration_limit" or (reason == "hook_abort" and self.control.exhausted):
            raise self._exceeded()
        error = result.error
        if reason == "provider_error" and isinstance(error, ProviderError):
            raise self._provider_failure(error)
        if reason in ("output_limit", "context_limit", "pause", "provider_stopped"):
            raise ExecutorIncomplete(
                f"the model stopped ({reason}) and the executor cannot continue",
                reason=reason,
                trace=trace,
                messages=history,
            )
        raise ExecutorError(f"the run ended {reason}: {result}", trace=trace, messages=history)

    def _provider_failure(self, error: ProviderError) -> ProviderError:
        """The error ``execute`` raises for a model call that failed (its cause: ``error``).

        Retryable: the retries ran out (``ProviderRetriesExhausted``, their count from the
        failed round). Otherwise the same class, its text prefixed with
        ``failed to stream model response: ``. Both carry the trace and the messages.
        """
        failed = self.trace.rounds[-1] if self.trace.rounds else None
        if error.retryable:
            retries = max(len(failed.errors) - 1, 0) if failed is not None else 0
            out: ProviderError = ProviderRetriesExhausted(
                f"model call failed after {retries} retries: {error}", error
            )
        else:
            out = _prefixed(error)
        out.__cause__ = error
        # a ProviderError of the provider layer has no such fields: they are added to it
        setattr(out, "trace", self.trace)  # noqa: B010
        setattr(out, "messages", tuple(self.history))  # noqa: B010
        return out

    def _suspended(self, result: RunResult[Any]) -> ExecutionSuspended:
        state = result.turn.suspension
        assert state is not None
        ex, trace = self.ex, self.trace
        prompt = state.pending_tool_calls[0].prompt if state.pending_tool_calls else ""
        trace.suspended, trace.suspension_reason = True, prompt
        suspension = Suspension(
            state=state,
            history=tuple(result.history),
            round=len(trace.rounds) - 1,
            remaining_rounds=max(self.budget - self.rounds, 0),
            provider=ex.model.provider,
            model=ex.model.name,
            config_digest=ex.config_digest,
            prompt=prompt,
        )
        return ExecutionSuspended(suspension, trace)

    def _raise_if_refused(self, result: RunResult[Any]) -> None:
        """A refusal ends the execution: ``ExecutorRefused`` with what the model said."""
        if result.stop_reason == "refusal":
            raise ExecutorRefused(
                f"the model refused: {result.stop_details or result.output_text}",
                trace=self.trace,
                messages=self.history,
            )

    async def _parse(self, result: RunResult[Any]) -> tuple[Any, str]:
        """Text mode: the last answer's JSON, validated, or the problem to repair."""
        ex, trace = self.ex, self.trace
        last = next((m for m in reversed(result.turn.messages) if m.role == "assistant"), None)
        text = "\n".join(b.text for b in last.content if isinstance(b, TextBlock)) if last else ""
        if not text.strip():
            raise ExecutorError("no content in model response", trace=trace)
        problem = "no JSON object found"
        for candidate in candidates(text):
            try:
                response = ex.response_type.model_validate_json(candidate)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]["msg"]
                problem = f"invalid JSON for {ex.response_type.__name__}: {first}"
                continue
            sub = SubmissionContext(
                reasoning="", tool_call_id="", round=len(trace.rounds) - 1, trace=trace
            )
            schema = ex.response_type.model_json_schema()
            findings = await run_validators(response, sub, schema, ex.result_validators)
            if findings:
                return None, "; ".join(f.details for f in findings)
            return response, ""
        return None, problem

    async def _submitted_instead(self, result: RunResult[Any]) -> bool:
        """A submission beats a suspension of the same round: run the one the loop left.

        The loop ends a batch at a suspension, so a submission after the suspend call in
        model order has not run; when it is accepted, it commits and nothing is suspended.
        """
        state = result.turn.suspension
        submit = next((t for t in self.tools if isinstance(t, SubmitLoopTool)), None)
        if state is None or submit is None:
            return False
        done = {*state.completed_tool_calls, *(p.id for p in state.pending_tool_calls)}
        last = next((m for m in reversed(state.turn_messages) if m.role == "assistant"), None)
        calls: Sequence[Any] = last.tool_calls if last is not None else ()
        for call in calls:
            unrun = call.name == submit.name and call.id not in done
            if unrun and await submit.commit_if_accepted(call):
                return settled(self.outcomes, self.trace, self.history)
        return False


STREAM_PREFIX = "failed to stream model response: "


def _prefixed(error: ProviderError) -> ProviderError:
    """A copy of ``error`` (class, status, request id…) whose text says the stream failed."""
    text = f"{STREAM_PREFIX}{error}"
    if type(error).__init__ is not ProviderError.__init__:  # a subclass with its own fields
        out = ProviderError(
            text, provider=error.provider, status=error.status, request_id=error.request_id
        )
    else:
        out = type(error)(
            text,
            provider=error.provider,
            status=error.status,
            request_id=error.request_id,
            retry_after=error.retry_after,
            error_type=error.error_type,
            body=error.body,
        )
    out.retryable = error.retryable
    return out
