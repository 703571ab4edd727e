"""OTel spans across a turn's life: provider retries, suspend and resume, the OTel context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from dive import Agent, tool
from dive.agent import ToolApproval
from dive.llm import ModelRequest, ModelResponse, StreamEvent
from dive.otel import OTelTracer
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.testing import anthropic as sim_anthropic
from dive.testing.anthropic import SimFault

FAST = RetryPolicy(max_retries=3, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Spans:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = OTelTracer(tracer_provider=self.provider)

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name.startswith(prefix)]


@pytest.fixture
def spans() -> Spans:
    return Spans()


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def id_of(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@pytest.mark.parametrize("streaming", [True, False])
async def test_provider_retries_are_events_on_the_chat_span(spans: Spans, streaming: bool) -> None:
    with sim_anthropic.simulator() as sim:
        sim.add(SimFault(status=529), SimFault(status=429, retry_after_ms=1), "fine")
        model = AnthropicModel(
            "claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST, streaming=streaming
        )
        try:
            result = await Agent(model=model, tracer=spans.tracer, name="a").run("hi")
        finally:
            await model.aclose()
    assert result.status == "completed", result.error
    [chat] = spans.named("chat ")
    [run] = spans.named("invoke_agent")
    assert parent_of(chat) == id_of(run)
    retries = [e for e in chat.events if e.name == "dive.provider.retry"]
    assert [dict(e.attributes or {}) for e in retries] == [
        {
            "dive.retry.attempt": 1,
            "error.type": "OverloadedError",
            "http.response.status_code": 529,
            "dive.retry.delay_s": pytest.approx(0.001, abs=0.01),  # pyright: ignore[reportUnknownMemberType]
            "exception.message": retries[0].attributes["exception.message"],  # type: ignore[index]
        },
        {
            "dive.retry.attempt": 2,
            "error.type": "RateLimitedError",
            "http.response.status_code": 429,
            "dive.retry.delay_s": pytest.approx(0.001, abs=0.01),  # pyright: ignore[reportUnknownMemberType]
            "exception.message": retries[1].attributes["exception.message"],  # type: ignore[index]
        },
    ]
    assert chat.status.status_code is not StatusCode.ERROR
    assert len(sim.requests) == 3


async def test_retries_exhausted_leave_an_error_chat_span_and_an_incomplete_run(
    spans: Spans,
) -> None:
    policy = RetryPolicy(max_retries=1, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)
    with sim_anthropic.simulator() as sim:
        sim.add(SimFault(status=529), SimFault(status=529))
        model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="t", retry=policy)
        try:
            result = await Agent(model=model, tracer=spans.tracer).run("hi")
        finally:
            await model.aclose()
    assert result.status == "incomplete"
    [chat] = spans.named("chat ")
    assert [e.name for e in chat.events] == ["dive.provider.retry"]  # one retry, then it gave up
    assert chat.status.status_code is StatusCode.ERROR
    assert attrs(chat)["error.type"] == "OverloadedError"
    [run] = spans.named("invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["dive.outcome.reason"] == "provider_error"


@tool(requires_approval=True, effect_type="write")
async def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def test_a_suspended_turn_and_its_resume_are_two_runs_of_one_turn(spans: Spans) -> None:
    store = MemorySessionStore()
    model = ScriptedModel(
        [tool_use(call("delete_file", {"path": "/tmp/x"}, id="g1")), text("deleted it")]
    )
    agent = Agent(
        model=model, tools=[delete_file], session=store.session("s1"), tracer=spans.tracer
    )
    first = await agent.run("delete it")
    assert first.status == "suspended"
    [suspended] = spans.named("invoke_agent")
    assert suspended.status.status_code is not StatusCode.ERROR
    a = attrs(suspended)
    assert (a["dive.turn.status"], a["dive.outcome.reason"]) == ("suspended", "approval_required")
    assert a["gen_ai.conversation.id"] == "s1"
    assert not spans.named("execute_tool")  # the held call did not run

    done = await agent.run(tool_results={"g1": ToolApproval(approved=True)})
    assert done.status == "completed"
    runs = spans.named("invoke_agent")
    assert len(runs) == 2
    resumed = next(s for s in runs if s is not suspended)
    b = attrs(resumed)
    assert b["dive.turn.status"] == "completed"
    assert b["dive.turn.id"] == a["dive.turn.id"] == first.turn.id
    assert b["gen_ai.conversation.id"] == "s1"
    [executed] = spans.named("execute_tool")
    assert parent_of(executed) == id_of(resumed)
    assert attrs(executed)["gen_ai.tool.call.id"] == "g1"
    chats = spans.named("chat ")
    assert [parent_of(c) for c in chats] == [id_of(suspended), id_of(resumed)]


class _Instrumented:
    """A model that opens a span of its own, as an instrumented HTTP client would."""

    def __init__(self, inner: ScriptedModel, spans: Spans) -> None:
        self.inner = inner
        self.otel = spans.provider.get_tracer("httpx")

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def provider(self) -> str:
        return self.inner.provider

    @property
    def supports_streaming(self) -> bool:
        return True

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        with self.otel.start_as_current_span("POST /v1/messages"):
            async for event in self.inner.stream(request):
                yield event

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.generate(request)


async def test_spans_opened_inside_a_model_call_or_a_tool_nest_under_dive_spans(
    spans: Spans,
) -> None:
    library = spans.provider.get_tracer("app")

    @tool(effect_type="read_only")
    async def query(sql: str) -> str:
        """Run a query."""
        with library.start_as_current_span(f"db {sql}"):
            await asyncio.sleep(0.01)  # the two parallel calls overlap
            return "1 row"

    model = _Instrumented(
        ScriptedModel(
            [tool_use(call("query", {"sql": "a"}), call("query", {"sql": "b"})), text("done")]
        ),
        spans,
    )
    agent = Agent(model=model, tools=[query], tracer=spans.tracer)
    with library.start_as_current_span("http request") as outer:
        assert (await agent.run("go")).output == "done"
        with library.start_as_current_span("after"):  # the app's span is current again
            pass
    by_name = {s.name: s for s in spans.all()}
    run = spans.named("invoke_agent")[0]
    assert parent_of(run) == outer.get_span_context().span_id  # the app's span is the parent
    assert parent_of(by_name["after"]) == outer.get_span_context().span_id
    chats = spans.named("chat ")
    posts = [s for s in spans.all() if s.name == "POST /v1/messages"]
    assert sorted(parent_of(p) or 0 for p in posts) == sorted(id_of(c) for c in chats)
    tools = {attrs(s)["gen_ai.tool.call.id"]: s for s in spans.named("execute_tool")}
    assert len(tools) == 2
    for sql in ("a", "b"):  # each query under its own call's span, though they overlapped
        parent = next(t for t in tools.values() if parent_of(by_name[f"db {sql}"]) == id_of(t))
        assert parent in tools.values()
    assert parent_of(by_name["db a"]) != parent_of(by_name["db b"])


async def test_time_to_first_chunk_is_the_first_events_latency_not_the_calls(
    spans: Spans,
) -> None:
    from dive.testing import Step

    # 0.05 s before the first event, then 0.05 s before each of the (at least 5) others
    model = ScriptedModel([Step(response="a fairly long answer", delay=0.05, event_delay=0.05)])
    await Agent(model=model, tracer=spans.tracer).run("hi")
    [chat] = spans.named("chat ")
    first = attrs(chat)["dive.time_to_first_chunk"]
    assert chat.end_time is not None
    assert chat.start_time is not None
    whole = (chat.end_time - chat.start_time) / 1e9
    assert 0.05 <= first < whole - 0.1


@pytest.mark.parametrize("how", ["api_key", "client"])
async def test_a_key_passed_to_a_provider_never_reaches_an_exported_span(
    spans: Spans, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anthropic

    key = "corp-gateway-" + how + "-0123456789abcdef"  # no known key shape: only registration
    env_key = "sk-ant-api03-" + "E" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    tracer = OTelTracer(tracer_provider=spans.provider, capture_content=True)
    with sim_anthropic.simulator() as sim:
        echo = f"invalid x-api-key {key}; also tried {env_key}"
        sim.add(SimFault(status=401, message=echo))
        if how == "api_key":
            model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key=key, retry=FAST)
        else:
            client = anthropic.AsyncAnthropic(api_key=key, base_url=sim.url)
            model = AnthropicModel("claude-sonnet-4-6", client=client, retry=FAST)
        try:
            result = await Agent(model=model, tracer=tracer).run("hi")
        finally:
            await model.aclose()
    assert result.status == "incomplete"
    assert key not in str(result.error)
    assert spans.all()
    for span in spans.all():
        blob = repr(dict(span.attributes or {})) + repr(span.status.description)
        blob += repr([(e.name, dict(e.attributes or {})) for e in span.events])
        assert key not in blob, span.name
        assert env_key not in blob, span.name


async def test_a_key_passed_to_gemini_never_reaches_an_exported_span(spans: Spans) -> None:
    from dive.providers.google import GeminiModel
    from dive.testing import gemini as sim_gemini

    key = "corp-gemini-gateway-0123456789abcdef"
    tracer = OTelTracer(tracer_provider=spans.provider, capture_content=True)
    with sim_gemini.simulator() as sim:
        sim.add(sim_gemini.SimFault(status=403, message=f"API key {key} is not valid"))
        model = GeminiModel("gemini-2.5-flash", api_key=key, base_url=sim.url, retry=FAST)
        try:
            result = await Agent(model=model, tracer=tracer).run("hi")
        finally:
            await model.aclose()
    assert result.status == "incomplete"
    assert key not in str(result.error)
    for span in spans.all():
        blob = repr(dict(span.attributes or {})) + repr(span.status.description)
        blob += repr([(e.name, dict(e.attributes or {})) for e in span.events])
        assert key not in blob, span.name


async def test_a_cancelled_run_leaves_no_current_span_behind(spans: Spans) -> None:
    from opentelemetry import trace

    from dive.testing import Step

    model = ScriptedModel([Step(response="late", delay=5), text("next")])
    agent = Agent(model=model, tracer=spans.tracer)
    before = trace.get_current_span()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await agent.run("slow")
    assert trace.get_current_span() is before  # the ended run span is not current any more
    await agent.run("again")
    runs = spans.named("invoke_agent")
    assert len(runs) == 2
    assert all(r.parent is None for r in runs)  # the second run is not under the dead one
