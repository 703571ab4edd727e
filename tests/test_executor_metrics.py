"""Executor metrics through the OpenTelemetry SDK's in-memory metric reader."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pydantic import BaseModel

from dive.executor import Executor, ExecutorOptions, MaxRoundsExceeded, SubmitTool
from dive.executor._metrics import reset_instruments
from dive.prompts import NoBindings, Prompt
from dive.testing import ScriptedModel, call, text, tool_use


class Answer(BaseModel):
    ok: bool


@pytest.fixture(scope="module")
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    reset_instruments()
    yield reader
    reset_instruments()


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    if data is None:
        return out
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def test_a_committed_run_with_a_redirect(reader: InMemoryMetricReader) -> None:
    model = ScriptedModel(
        [text("plain"), tool_use(call("submit_result", {"reasoning": "r", "result": {"ok": True}}))]
    )
    ex = Executor(
        model, Prompt("Go."), response_type=Answer, submit_tool=SubmitTool(), name="judge"
    )
    assert ex.execute_sync(NoBindings()).ok
    points = _points(reader)
    rounds = [
        p
        for p in points["dive.executor.rounds"]
        if p.attributes["dive.executor.outcome"] == "committed"
    ]
    assert rounds[0].sum == 2
    assert rounds[0].attributes["gen_ai.agent.name"] == "judge"
    assert rounds[0].attributes["gen_ai.provider.name"] == "scripted"
    kinds = {p.attributes["dive.intervention"] for p in points["dive.executor.interventions"]}
    assert "submit_redirect" in kinds
    tokens = {p.attributes["gen_ai.token.type"] for p in points["gen_ai.client.token.usage"]}
    assert tokens == {"input", "output"}
    assert all("gen_ai.tool.call.id" not in p.attributes for ps in points.values() for p in ps)


def test_the_round_limit_is_counted_with_its_outcome(reader: InMemoryMetricReader) -> None:
    model = ScriptedModel([text("no"), text("no")])
    ex = Executor(
        model,
        Prompt("Go."),
        response_type=Answer,
        submit_tool=SubmitTool(),
        options=ExecutorOptions(max_rounds=2),
    )
    with pytest.raises(MaxRoundsExceeded):
        ex.execute_sync(NoBindings())
    points = _points(reader)
    assert sum(p.value for p in points["dive.executor.round_limit_exceeded"]) >= 1
    outcomes = {p.attributes["dive.executor.outcome"] for p in points["dive.executor.rounds"]}
    assert "round_limit" in outcomes


async def test_every_attempt_is_counted_with_its_status(reader: InMemoryMetricReader) -> None:
    import dive.testing.anthropic as anth
    from dive.providers import RetryPolicy
    from dive.providers.anthropic import AnthropicModel

    fast = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    with anth.simulator(assert_consumed=True) as sim:
        sim.add(
            anth.SimFault(status=529),
            anth.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}}),
        )
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=fast)
        ex = Executor(model, Prompt("Go."), response_type=Answer, submit_tool=SubmitTool())
        assert (await ex.execute(NoBindings())).ok
        await model.aclose()
    attempts = [
        p
        for p in _points(reader)["dive.executor.api.requests"]
        if p.attributes["gen_ai.provider.name"] == "anthropic"
    ]
    by_status = {p.attributes["http.response.status_code"]: p for p in attempts}
    assert by_status[529].attributes["error.type"] == "OverloadedError"
    assert by_status[529].value >= 1
    assert by_status[200].value >= 1
    assert "error.type" not in by_status[200].attributes
