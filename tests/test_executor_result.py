"""``Executor.run``: usage and trace on success, suspension as a status; one ``Tracer`` protocol.

Through the official anthropic SDK against dive's Anthropic simulator.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.executor
import dive.testing.anthropic as anth
import dive.tracing
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorConfigError,
    ExecutorOptions,
    ExecutorTool,
    ExecutorToolContext,
    SubmitTool,
    use_tracer,
)
from dive.llm import ModelResponse
from dive.messages import ToolCall, ToolDefinition
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.tools import Suspend
from dive.tracing import AgentRunInfo, AgentRunSpan, ChatInfo, ChatSpan, ToolCallInfo, ToolSpan

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Answer(BaseModel):
    ok: bool = False


@pytest.fixture
async def sim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
async def model(sim: anth.AnthropicSimulator) -> AsyncIterator[AnthropicModel]:
    m = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
    yield m
    await m.aclose()


def _ask() -> ExecutorTool[Any]:
    async def ask(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
        return Suspend("Ship it?")

    definition = ToolDefinition(name="ask_human", description="Ask a person.", input_schema={})
    return ExecutorTool(definition=definition, handler=ask)


def _ex(model: AnthropicModel, **kwargs: Any) -> Executor[NoBindings, Answer]:
    kwargs.setdefault("submit_tool", SubmitTool())
    return Executor(model, Prompt("Answer."), response_type=Answer, **kwargs)


def _submit() -> Any:
    return anth.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}})


async def probe(path: str) -> dict[str, str]:
    """Probe a path."""
    return {"path": path}


async def test_a_successful_run_gives_the_output_the_trace_and_the_usage(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    sim.add(anth.tool_use("probe", {"reasoning": "r", "path": "a"}), _submit())
    tools = {"probe": ExecutorTool.from_function(probe)}
    result = await _ex(model).run(NoBindings(), tools=tools)
    assert result.status == "completed"
    assert result.output == Answer(ok=True)
    assert result.suspension is None
    assert [c.name for c in result.trace.tool_calls] == ["probe", "submit_result"]
    assert result.trace.result == {"ok": True}
    usage = result.usage
    assert usage.requests == 2
    assert usage.total_input_tokens == result.trace.input_tokens > 0
    assert usage.output_tokens == result.trace.output_tokens > 0
    assert usage.cost is not None
    assert usage.cost > 0


async def test_a_suspension_is_a_status_and_run_resumes_it(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    sim.add(anth.tool_use("ask_human", {}), _submit())
    ex = _ex(model, suspend_tool=_ask(), options=ExecutorOptions(max_rounds=5))
    parked = await ex.run(NoBindings())
    assert parked.status == "suspended"
    assert parked.output is None
    assert parked.suspension is not None
    assert parked.trace.suspended
    assert parked.usage.requests == 1
    (call_id,) = parked.suspension.pending_call_ids
    done = await ex.run(suspension=parked.suspension, answers={call_id: "yes"})
    assert done.status == "completed"
    assert done.output == Answer(ok=True)
    assert done.usage.requests == 1


async def test_run_takes_a_request_or_a_suspension(model: AnthropicModel) -> None:
    with pytest.raises(ExecutorConfigError, match="a request"):
        await _ex(model).run()


def test_there_is_one_tracer_protocol() -> None:
    assert dive.executor.Tracer is dive.tracing.Tracer


class SpansAndTraces:
    """A dive tracer that also records finished execution traces."""

    def __init__(self) -> None:
        self.chats: list[str] = []
        self.traces: list[ExecutionTrace] = []

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        return dive.tracing.NopTracer().start_agent_run(info)

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        tracer = self

        class Span:
            def set_response(self, response: ModelResponse) -> None:
                tracer.chats.append(response.stop_reason or "")

            def set_time_to_first_chunk(self, seconds: float) -> None:
                pass

            def end(self, error: BaseException | None = None) -> None:
                pass

        return Span()

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        return dive.tracing.NopTracer().start_tool_call(info)

    def record(self, trace: ExecutionTrace) -> None:
        self.traces.append(trace)


async def test_an_installed_tracer_gets_the_spans_and_the_trace(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    sim.add(_submit())
    tracer = SpansAndTraces()
    with use_tracer(Answer, tracer):
        await _ex(model).execute(NoBindings())
    assert tracer.chats == ["tool_use"]
    assert len(tracer.traces) == 1


async def test_the_executors_own_tracer_gets_the_trace_when_it_records(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    sim.add(_submit())
    tracer = SpansAndTraces()
    await _ex(model, tracer=tracer).execute(NoBindings())
    assert tracer.chats == ["tool_use"]
    assert [t.result for t in tracer.traces] == [{"ok": True}]
