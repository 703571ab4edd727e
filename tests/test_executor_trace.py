"""The execution trace is complete: every attempt, every round, every call, however it ends.

Through the official anthropic SDK against dive's Anthropic simulator; the traces are the ones
an installed tracer receives (``use_tracer``), on success and on failure alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorOptions,
    ExecutorTool,
    Observer,
    ProviderRetriesExhausted,
    SubmitTool,
    no_errors,
    use_tracer,
)
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel

FAST = RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Answer(BaseModel):
    ok: bool = False


class Keep:
    """A tracer that keeps every finished trace."""

    def __init__(self) -> None:
        self.traces: list[ExecutionTrace] = []

    def record(self, trace: ExecutionTrace) -> None:
        self.traces.append(trace)


@pytest.fixture
async def sim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
async def model(sim: anth.AnthropicSimulator) -> AsyncIterator[AnthropicModel]:
    m = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
    yield m
    await m.aclose()


@pytest.fixture
def kept() -> Iterator[Keep]:
    keep = Keep()
    with use_tracer(Answer, keep):
        yield keep


def _ex(model: AnthropicModel, **options: Any) -> Executor[NoBindings, Answer]:
    return Executor(
        model,
        Prompt("Answer."),
        response_type=Answer,
        submit_tool=SubmitTool(),
        options=ExecutorOptions(**options),
    )


def _submit() -> Any:
    return anth.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}})


async def probe(path: str) -> dict[str, str]:
    """Probe a path."""
    return {"path": path}


def _probe() -> dict[str, ExecutorTool[Any]]:
    return {"probe": ExecutorTool.from_function(probe)}


async def test_retried_attempts_are_in_their_round(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(anth.SimFault(status=429, retry_after=0), anth.SimFault(status=529), _submit())
    assert (await _ex(model).execute(NoBindings())).ok
    (trace,) = kept.traces
    (round_,) = trace.rounds
    assert len(round_.errors) == 2
    assert "RateLimitedError" in round_.errors[0]
    assert "OverloadedError" in round_.errors[1]
    assert not round_.failed
    assert round_.stop_reason == "tool_use"


async def test_a_call_that_finally_fails_leaves_a_failed_round(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(anth.tool_use("probe", {"reasoning": "r", "path": "a"}))
    for _ in range(3):
        sim.add(anth.SimFault(status=529))
    with pytest.raises(ProviderRetriesExhausted) as info:
        await _ex(model).execute(NoBindings(), tools=_probe())
    trace = info.value.trace
    assert trace is not None
    assert trace is kept.traces[0]
    assert [r.failed for r in trace.rounds] == [False, True]
    assert len(trace.rounds[1].errors) == 3  # two retried attempts and the last one
    assert trace.rounds[1].end_time is not None


async def test_a_non_retried_failure_leaves_a_failed_round(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    from dive.errors import ProviderError

    sim.add(anth.SimFault(status=400, message="messages: bad"))
    with pytest.raises(ProviderError, match="messages: bad"):
        await _ex(model).execute(NoBindings())
    (round_,) = kept.traces[0].rounds
    assert round_.failed
    assert len(round_.errors) == 1


async def test_every_round_has_its_stop_reason(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(
        anth.tool_use("probe", {"reasoning": "r", "path": "a"}),
        anth.tool_use("probe", {"reasoning": "r", "path": "b"}),
        anth.text("I think it is fine."),  # redirected to the submit tool
        _submit(),
    )
    await _ex(model).execute(NoBindings(), tools=_probe())
    (trace,) = kept.traces
    assert [r.stop_reason for r in trace.rounds] == ["tool_use", "tool_use", "end_turn", "tool_use"]
    assert [r.index for r in trace.rounds] == [0, 1, 2, 3]


async def test_unknown_tool_calls_are_traced_and_fail_no_errors(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(anth.tool_use("prob", {"path": "a"}), _submit())
    assert (await _ex(model).execute(NoBindings(), tools=_probe())).ok
    (trace,) = kept.traces
    unknown = trace.tool_calls[0]
    assert unknown.name == "prob"
    assert unknown.params == {"path": "a"}
    assert unknown.error is not None
    assert unknown.error.startswith("UnknownToolError")
    assert "Did you mean: probe" in unknown.error
    obs = Observer()
    no_errors()(obs, trace)
    assert obs.failures == ["called unknown tool(s): ['prob']"]


async def test_no_errors_grades_exhausted_retries_as_infrastructure(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    for _ in range(3):
        sim.add(anth.SimFault(status=529))
    with pytest.raises(ProviderRetriesExhausted):
        await _ex(model).execute(NoBindings())
    obs = Observer()
    no_errors()(obs, kept.traces[0])
    assert obs.failures == []
    ((score, reasoning),) = obs.grades
    assert score == 1.0
    assert reasoning.startswith("infrastructure error")


def _pause() -> Any:
    return anth.reply(
        blocks=[anth.server_tool_use_block("web_search", {"query": "q"})], stop_reason="pause_turn"
    )


async def test_pause_resends_are_free(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(_pause(), _pause(), _submit())
    assert (await _ex(model, max_rounds=1).execute(NoBindings())).ok
    (trace,) = kept.traces
    assert [r.stop_reason for r in trace.rounds] == ["pause_turn", "pause_turn", "tool_use"]


async def test_pause_resends_leave_the_budget_to_the_real_rounds(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(anth.tool_use("probe", {"reasoning": "r", "path": "a"}), _pause(), _submit())
    assert (await _ex(model, max_rounds=2).execute(NoBindings(), tools=_probe())).ok


async def test_an_unknown_seed_call_is_traced_too(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    from dive.messages import ToolCall

    sim.add(_submit())
    seed = ToolCall(id="seed1", name="prob", arguments={"path": "a"})
    await _ex(model).execute(NoBindings(), tools=_probe(), seed_tool_calls=[seed])
    traced = kept.traces[0].tool_calls[0]
    assert traced.seeded
    assert (traced.error or "").startswith('UnknownToolError: Tool "prob" does not exist')
    sent = sim.requests[0]["messages"][2]["content"][0]
    assert sent["is_error"] is True


async def test_round_errors_never_echo_the_api_key(
    sim: anth.AnthropicSimulator, kept: Keep
) -> None:
    key = "sk-ant-test-key-that-must-not-leak-0123456789"
    message = f"invalid x-api-key: {key}"
    sim.add(anth.SimFault(status=529, message=message), anth.SimFault(status=401, message=message))
    model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key=key, retry=FAST)
    with pytest.raises(Exception):  # noqa: B017 - the authentication error, whatever its text
        await _ex(model).execute(NoBindings())
    await model.aclose()
    (round_,) = kept.traces[0].rounds
    assert len(round_.errors) == 2
    assert all(key not in e for e in round_.errors)
    assert key not in kept.traces[0].to_json()
