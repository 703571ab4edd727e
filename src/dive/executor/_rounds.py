"""Rounds in the trace, written as the loop makes its model calls.

``RoundRecorder`` is a ``dive.tracing.Tracer`` the executor adds to every loop turn it runs
(next to the caller's tracer): each chat span opens a round (``index``: its place in the
trace), each retried attempt the provider reports is added to that round's ``errors``, the
response sets its ``stop_reason``, usage and cost, and a call that fails in the end leaves
its round ``failed`` with the last error too. So a trace has a round for every model call,
retried or failed ones included, whatever way the execution ended.

Pause resends (``pause_turn``) are rounds in the trace but cost no round of the budget:
``charged`` counts the others. Tool calls the loop answers without running them (an unknown
tool name) are added as traced calls from the turn's events (``trace_unknown_calls``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dive.agent import RunResult
from dive.executor._trace import ExecutionTrace, TracedCall, TracedRound
from dive.llm import Model, ModelResponse, RetryNotice
from dive.messages import RedactedThinkingBlock, ThinkingBlock, ToolResult
from dive.messages.codec import to_jsonable
from dive.redaction import redact
from dive.tracing import (
    AgentRunInfo,
    AgentRunSpan,
    ChatInfo,
    ChatSpan,
    NopTracer,
    ToolCallInfo,
    ToolSpan,
)

__all__ = ["RoundRecorder", "trace_unknown_calls"]

_NOP = NopTracer()


class _RoundSpan:
    """One model call: its round in the trace."""

    def __init__(self, recorder: RoundRecorder, round_: TracedRound) -> None:
        self._recorder = recorder
        self._round = round_

    def add_retry(self, notice: RetryNotice) -> None:
        self._round.errors.append(f"{notice.error_type}: {redact(notice.message)}")

    def set_time_to_first_chunk(self, seconds: float) -> None:
        pass

    def set_response(self, response: ModelResponse) -> None:
        r, usage = self._round, response.usage
        r.stop_reason = response.stop_reason
        r.input_tokens = usage.input_tokens
        r.output_tokens = usage.output_tokens
        r.cache_read_tokens = usage.cache_read_input_tokens
        r.cache_creation_tokens = usage.cache_creation_input_tokens
        r.reasoning_tokens = usage.reasoning_tokens
        r.cost = usage.cost
        recorder = self._recorder
        if response.stop_kind == "pause":
            recorder.free.add(r.index)
        for call in response.tool_calls:
            recorder.call_rounds[call.id] = r.index
        if recorder.capture:
            r.response = to_jsonable(response.content)
        for block in response.content:
            if isinstance(block, RedactedThinkingBlock):
                recorder.trace.add_reasoning(r.index, None, redacted=True)
            elif isinstance(block, ThinkingBlock) and recorder.capture:
                recorder.trace.add_reasoning(r.index, block.thinking)

    def end(self, error: BaseException | None = None) -> None:
        self._round.end_time = datetime.now(UTC)
        if error is not None:
            self._round.errors.append(f"{type(error).__name__}: {redact(str(error))}")
            self._round.failed = True


class RoundRecorder:
    """The executor's tracer: a round per model call (see the module docstring).

    Args:
        trace: the execution's trace.
        model: the model the rounds are made with.
        capture: keep response content and reasoning text (``capture_payloads``).
    """

    def __init__(self, trace: ExecutionTrace, model: Model, *, capture: bool) -> None:
        self.trace = trace
        self.model = model
        self.capture = capture
        self.free: set[int] = set()  # pause resends: rounds that cost no budget
        self.call_rounds: dict[str, int] = {}  # call id → the round whose response made it

    def mark(self) -> int:
        """A position in the trace's rounds, for ``charged``."""
        return len(self.trace.rounds)

    def charged(self, since: int) -> int:
        """The rounds recorded since ``since`` that count against the budget."""
        return sum(1 for r in self.trace.rounds[since:] if r.index not in self.free)

    @property
    def last_paused(self) -> bool:
        """Whether the most recent round was a pause (its resend follows, no tool round)."""
        return bool(self.trace.rounds) and self.trace.rounds[-1].index in self.free

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        return _NOP.start_agent_run(info)

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        round_ = TracedRound(
            index=len(self.trace.rounds), model=self.model.name, provider=self.model.provider
        )
        self.trace.add_round(round_)
        return _RoundSpan(self, round_)

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        return _NOP.start_tool_call(info)


def trace_unknown_calls(recorder: RoundRecorder, result: RunResult[Any]) -> None:
    """Trace the calls of ``result`` the loop answered as unknown tools (never run)."""
    trace = recorder.trace
    traced = {c.id for c in trace.tool_calls}
    for event in result.tool_call_results():
        if event.call.id in traced or not (event.error or "").startswith("UnknownToolError"):
            continue
        text = event.result.text if isinstance(event.result, ToolResult) else ""
        round_ = recorder.call_rounds.get(event.call.id)
        record = TracedCall(
            id=event.call.id,
            name=event.call.name,
            params=dict(event.call.arguments),
            error=f"UnknownToolError: {text}",
            round=round_,
            end_time=datetime.now(UTC),
        )
        # in round order: before the calls of later rounds
        later = (i for i, c in enumerate(trace.tool_calls) if (c.round or 0) > (round_ or 0))
        trace.tool_calls.insert(next(later, len(trace.tool_calls)), record)
