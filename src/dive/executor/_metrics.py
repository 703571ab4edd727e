"""Executor metrics on OpenTelemetry (scope ``dive.executor``); no-op without it.

Recorded when an execution ends (every exit, with its outcome), from its trace: rounds,
token usage (``input`` counts cache reads and writes too), cache tokens, tool calls,
interventions (redirects, nudges, rejected submissions, repairs, cut-off continuations),
round-limit exits and every model call attempt (``dive.executor.api.requests``, retried and
failed ones with their error type and status). Every point carries the provider label, the
requested model, the agent name (if set) and the resource labels; never request, trace or
call ids.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from dive.executor._trace import ExecutionTrace, TracedRound

__all__ = ["OUTCOMES", "record_metrics"]

OUTCOMES = ("committed", "parsed", "suspended", "round_limit", "incomplete", "refused", "error")
TOKEN_BUCKETS = [float(4**i) for i in range(14)]  # 1, 4, 16 … 67,108,864
ROUND_BUCKETS = [1.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]

_instruments: dict[str, Any] | None = None


def _meter_instruments() -> dict[str, Any] | None:
    """The instruments, created once from the global meter provider (None without OTel)."""
    global _instruments
    if _instruments is not None:
        return _instruments
    try:
        from opentelemetry import metrics
    except ImportError:
        return None
    meter = metrics.get_meter("dive.executor")
    _instruments = {
        "tokens": meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used per model call",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        ),
        "cache": meter.create_counter(
            "dive.executor.cache.tokens", unit="{token}", description="Prompt-cache tokens"
        ),
        "tools": meter.create_counter(
            "dive.executor.tool.calls", unit="{call}", description="Model-made tool calls"
        ),
        "interventions": meter.create_counter(
            "dive.executor.interventions", description="Redirects, nudges, rejections, repairs"
        ),
        "rounds": meter.create_histogram(
            "dive.executor.rounds",
            unit="{round}",
            description="Model round-trips per execution",
            explicit_bucket_boundaries_advisory=ROUND_BUCKETS,
        ),
        "round_limit": meter.create_counter(
            "dive.executor.round_limit_exceeded", description="Executions out of rounds"
        ),
        "requests": meter.create_counter(
            "dive.executor.api.requests",
            unit="{request}",
            description="Model call attempts, retried and failed ones included",
        ),
    }
    return _instruments


def reset_instruments() -> None:
    """Forget the instruments (a test installed a new meter provider)."""
    global _instruments
    _instruments = None


def record_metrics(
    trace: ExecutionTrace,
    outcome: str,
    interventions: Sequence[str],
    base: Mapping[str, str],
) -> None:
    """Record one finished execution. Never raises into the executor."""
    inst = _meter_instruments()
    if inst is None:
        return
    attrs = dict(base)
    for r in trace.rounds:
        model = {"gen_ai.operation.name": "chat", "gen_ai.response.model": r.model or ""}
        total_in = r.input_tokens + r.cache_read_tokens + r.cache_creation_tokens
        inst["tokens"].record(total_in, {**attrs, **model, "gen_ai.token.type": "input"})
        inst["tokens"].record(r.output_tokens, {**attrs, **model, "gen_ai.token.type": "output"})
        if r.cache_read_tokens:
            inst["cache"].add(r.cache_read_tokens, {**attrs, "gen_ai.token.type": "cache_read"})
        if r.cache_creation_tokens:
            inst["cache"].add(
                r.cache_creation_tokens, {**attrs, "gen_ai.token.type": "cache_creation"}
            )
    for r in trace.rounds:
        _count_attempts(inst["requests"], r, attrs)
    for call in trace.tool_calls:
        if not call.seeded:
            inst["tools"].add(1, {**attrs, "gen_ai.tool.name": call.name})
    for kind in interventions:
        inst["interventions"].add(1, {**attrs, "dive.intervention": kind})
    inst["rounds"].record(len(trace.rounds), {**attrs, "dive.executor.outcome": outcome})
    if outcome == "round_limit":
        inst["round_limit"].add(1, attrs)


_STATUS = re.compile(r" returned (\d{3}) ")


def _count_attempts(counter: Any, round_: TracedRound, attrs: Mapping[str, str]) -> None:
    """One point per attempt of a round: each failed one, then the one that answered (200)."""
    for error in round_.errors:  # "<ErrorType>: <message>"
        kind, _, message = error.partition(": ")
        point: dict[str, Any] = {**attrs, "error.type": kind}
        status = _STATUS.search(f" {message} ")
        if status is not None:
            point["http.response.status_code"] = int(status.group(1))
        counter.add(1, point)
    if not round_.failed:
        counter.add(1, {**attrs, "http.response.status_code": 200})
