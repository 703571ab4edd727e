"""dive.otel through the OpenTelemetry SDK's in-memory span and metric exporters."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from dive import Agent, Limits, tool
from dive.otel import OTelTracer
from dive.testing import ScriptedModel, Step, call, text, tool_use

SECRET = "sk-ant-api03-" + "S3CR3T" * 8


@tool(effect_type="read_only")
async def lookup(key: str) -> str:
    """Look a key up."""
    await asyncio.sleep(0.01)
    return f"value of {key}"


class Telemetry:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.tracer = OTelTracer(
            tracer_provider=provider, meter_provider=MeterProvider(metric_readers=[self.reader])
        )

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def metrics(self) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out.setdefault(m.name, []).extend(m.data.data_points)
        return out


@pytest.fixture
def otel() -> Telemetry:
    return Telemetry()


async def test_a_tool_loop_with_parallel_calls_is_one_tree(otel: Telemetry) -> None:
    model = ScriptedModel(
        [tool_use(call("lookup", {"key": "a"}), call("lookup", {"key": "b"})), text("done")]
    )
    agent = Agent(model=model, tools=[lookup], tracer=otel.tracer, name="helper")
    result = await agent.run("go")
    assert result.status == "completed"
    spans = otel.finished()
    (root,) = [s for s in spans if s.name == "invoke_agent helper"]
    children = [s for s in spans if s is not root]
    assert sorted(s.name for s in children) == [
        "chat scripted",
        "chat scripted",
        "execute_tool lookup",
        "execute_tool lookup",
    ]
    assert root.context is not None
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in children)
    assert root.attributes is not None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "helper"
    assert root.attributes["dive.turn.status"] == "completed"
    tool_span = next(s for s in children if s.name.startswith("execute_tool"))
    assert tool_span.attributes is not None
    assert tool_span.attributes["gen_ai.tool.type"] == "function"
    assert str(tool_span.attributes["gen_ai.tool.call.id"]).startswith("call_")
    points = otel.metrics()
    assert {p.attributes["gen_ai.token.type"] for p in points["gen_ai.client.token.usage"]} == {
        "input",
        "output",
    }
    assert sum(p.value for p in points["dive.tool.calls"]) == 2
    assert points["gen_ai.client.operation.duration"]


async def test_an_incomplete_turn_is_an_error_span_with_the_reason(otel: Telemetry) -> None:
    model = ScriptedModel([Step(raise_before=RuntimeError(f"bad key {SECRET}"))])
    agent = Agent(model=model, tracer=otel.tracer, limits=Limits(max_model_calls_per_turn=3))
    result = await agent.run("go")
    assert result.status == "incomplete"
    (root,) = [s for s in otel.finished() if s.name.startswith("invoke_agent")]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["dive.outcome.reason"] == result.outcome.reason  # type: ignore[union-attr]
    chat = next(s for s in otel.finished() if s.name.startswith("chat"))
    assert chat.status.status_code is StatusCode.ERROR


async def test_no_secret_reaches_any_exported_attribute_or_event(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    from dive.redaction import register_secret

    register_secret(SECRET)
    model = ScriptedModel(
        [Step(raise_before=RuntimeError(f"auth failed for {SECRET}")), text("ok")]
    )
    agent = Agent(model=model, tracer=otel.tracer)
    await agent.run(f"my key is {SECRET}")
    await agent.run("again")
    for span in otel.finished():
        blob = repr(dict(span.attributes or {})) + repr(span.status.description)
        blob += repr([(e.name, dict(e.attributes or {})) for e in span.events])
        assert SECRET not in blob, span.name


async def test_an_executor_run_is_traced(otel: Telemetry) -> None:
    from pydantic import BaseModel

    from dive.executor import Executor, SubmitTool
    from dive.prompts import NoBindings, Prompt

    class Answer(BaseModel):
        ok: bool

    model = ScriptedModel(
        [tool_use(call("submit_result", {"reasoning": "r", "result": {"ok": True}}))]
    )
    ex = Executor(
        model,
        Prompt("Go."),
        response_type=Answer,
        submit_tool=SubmitTool(),
        name="checker",
        tracer=otel.tracer,
    )
    assert (await ex.execute(NoBindings())).ok
    names = sorted(s.name for s in otel.finished())
    assert names == ["chat scripted", "execute_tool submit_result", "invoke_agent checker"]


def test_attribute_names_are_the_semantic_conventions_where_they_define_them() -> None:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai

    defined = {v for k, v in vars(gen_ai).items() if k.startswith("GEN_AI_") and isinstance(v, str)}
    ours = {
        "gen_ai.operation.name",
        "gen_ai.provider.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.response.id",
        "gen_ai.response.finish_reasons",
        "gen_ai.conversation.id",
        "gen_ai.agent.name",
        "gen_ai.agent.id",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.type",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.request.max_tokens",
        "gen_ai.request.temperature",
        "gen_ai.token.type",
    }
    missing = sorted(ours - defined)
    assert not missing, f"not in the installed semantic conventions: {missing}"


async def test_content_is_captured_only_on_request_and_redacted() -> None:
    from dive.redaction import register_secret

    register_secret(SECRET)
    for capture in (False, True):
        telemetry = Telemetry()
        telemetry.tracer = OTelTracer(tracer_provider=_provider(telemetry), capture_content=capture)
        model = ScriptedModel([tool_use(call("lookup", {"key": SECRET})), text("done")])
        agent = Agent(model=model, tools=[lookup], tracer=telemetry.tracer)
        await agent.run(f"use {SECRET}")
        spans = telemetry.finished()
        chat = next(s for s in spans if s.name.startswith("chat"))
        tool_span = next(s for s in spans if s.name.startswith("execute_tool"))
        assert chat.attributes is not None
        assert tool_span.attributes is not None
        if not capture:
            assert "gen_ai.input.messages" not in chat.attributes
            assert "gen_ai.tool.call.arguments" not in tool_span.attributes
            continue
        assert "[redacted]" in str(chat.attributes["gen_ai.input.messages"])
        assert "lookup" in str(chat.attributes["gen_ai.output.messages"])
        assert "gen_ai.tool.call.result" in tool_span.attributes
        for span in spans:
            assert SECRET not in repr(dict(span.attributes or {}))


def _provider(telemetry: Telemetry) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(telemetry.spans))
    return provider


async def test_an_agent_run_inside_a_tool_nests_and_the_outer_run_goes_on(
    otel: Telemetry,
) -> None:
    inner = Agent(model=ScriptedModel([text("inner answer")]), name="inner", tracer=otel.tracer)

    @tool
    async def delegate(question: str) -> str:
        """Ask the inner agent."""
        return (await inner.run(question)).output

    model = ScriptedModel(
        [
            tool_use(call("delegate", {"question": "q"})),
            tool_use(call("lookup", {"key": "k"})),
            text("done"),
        ]
    )
    outer = Agent(model=model, tools=[delegate, lookup], name="outer", tracer=otel.tracer)
    assert (await outer.run("go")).output == "done"
    spans = {s.name: s for s in otel.finished()}
    root = spans["invoke_agent outer"]
    assert root.context is not None
    nested = spans["invoke_agent inner"]
    assert nested.parent is not None
    assert nested.parent.span_id == root.context.span_id
    late = [s for s in otel.finished() if s.name == "execute_tool lookup"]
    assert late[0].parent is not None
    assert late[0].parent.span_id == root.context.span_id  # not under the ended inner run


@tool(tags=("search", "web"), risk_level="high", effect_type="read_only")
async def tagged(key: str) -> str:
    """A tool with tags and a risk level."""
    return key


async def test_an_execute_tool_span_carries_the_tools_tags_and_risk(otel: Telemetry) -> None:
    model = ScriptedModel([tool_use(call("tagged", {"key": "a"})), text("done")])
    agent = Agent(model=model, tools=[tagged], tracer=otel.tracer)
    assert (await agent.run("go")).status == "completed"
    (span,) = [s for s in otel.finished() if s.name == "execute_tool tagged"]
    assert span.attributes is not None
    assert span.attributes["dive.tool.tags"] == ("search", "web")
    assert span.attributes["dive.tool.risk"] == "high"
    assert span.attributes["dive.tool.effect"] == "read_only"


async def test_a_tool_without_tags_or_risk_has_neither_attribute(otel: Telemetry) -> None:
    model = ScriptedModel([tool_use(call("lookup", {"key": "a"})), text("done")])
    agent = Agent(model=model, tools=[lookup], tracer=otel.tracer)
    assert (await agent.run("go")).status == "completed"
    (span,) = [s for s in otel.finished() if s.name == "execute_tool lookup"]
    assert span.attributes is not None
    assert "dive.tool.tags" not in span.attributes
    assert "dive.tool.risk" not in span.attributes
