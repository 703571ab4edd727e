"""How an execution fails: validators that raise, submissions that are not objects, provider
errors that are not retried, and a retry policy given for a model object.

Through the official anthropic SDK against dive's Anthropic simulator.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.errors import InvalidRequestError
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorConfigError,
    ExecutorOptions,
    Finding,
    ProviderRetriesExhausted,
    ResultValidationError,
    SubmissionContext,
    SubmitTool,
    use_tracer,
)
from dive.llm import Model
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.testing import ScriptedModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Answer(BaseModel):
    ok: bool = False


class Keep:
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


def _ex(model: Model, **kwargs: Any) -> Executor[NoBindings, Answer]:
    kwargs.setdefault("submit_tool", SubmitTool())
    return Executor(model, Prompt("Answer."), response_type=Answer, **kwargs)


def _submit() -> Any:
    return anth.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}})


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_raising_validator_raises_result_validation_error(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep, asynchronous: bool
) -> None:
    def broken(a: Answer, ctx: SubmissionContext) -> list[Finding]:
        raise RuntimeError("the policy service is down")

    async def broken_async(a: Answer, ctx: SubmissionContext) -> list[Finding]:
        raise RuntimeError("the policy service is down")

    sim.add(_submit())
    validator = broken_async if asynchronous else broken
    ex = _ex(model, result_validators=[validator])
    with pytest.raises(ResultValidationError, match=r"^result validation: the policy service") as e:
        await ex.execute(NoBindings())
    assert e.value.trace is kept.traces[0]
    assert isinstance(e.value.__cause__, RuntimeError)
    assert e.value.messages  # how far it got


@pytest.mark.parametrize("raw", [[1, 2], "a string", None, 3])
async def test_a_non_object_submission_is_normalised_and_its_rejection_traced(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep, raw: Any
) -> None:
    call = {"type": "tool_use", "id": "toolu_bad", "name": "submit_result", "input": raw}
    sim.add(anth.reply(blocks=[call]), _submit())
    assert (await _ex(model).execute(NoBindings())).ok
    rejected = sim.requests[1]["messages"][-1]["content"][0]
    assert rejected["is_error"] is True
    body = json.loads(rejected["content"][0]["text"])
    assert body["error"].startswith("Failed to parse tool input: ")
    first, committed = kept.traces[0].tool_calls
    assert first.id == "toolu_bad"
    assert first.params == {}  # normalised
    assert first.recoverable
    assert (first.error or "").startswith("Failed to parse tool input: ")
    assert committed.terminal


async def test_a_failure_that_is_not_retried_says_the_stream_failed(
    sim: anth.AnthropicSimulator, model: AnthropicModel, kept: Keep
) -> None:
    sim.add(anth.SimFault(status=400, message="messages: something is off"))
    with pytest.raises(InvalidRequestError) as info:
        await _ex(model).execute(NoBindings())
    err = info.value
    assert str(err).startswith("failed to stream model response: anthropic returned 400")
    assert "messages: something is off" in str(err)
    assert err.status == 400
    assert err.request_id
    assert isinstance(err.__cause__, InvalidRequestError)
    assert kept.traces[0].error is not None


async def test_the_retry_option_applies_to_a_model_object(sim: anth.AnthropicSimulator) -> None:
    for _ in range(2):
        sim.add(anth.SimFault(status=529))
    model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test")
    ex = _ex(model, options=ExecutorOptions(retry=RetryPolicy(max_retries=1, **_QUICK)))
    with pytest.raises(ProviderRetriesExhausted, match="failed after 1 retries"):
        await ex.execute(NoBindings())
    await model.aclose()
    assert len(sim.requests) == 2  # one attempt and one retry, not the model's default five
    assert model.retry == RetryPolicy()  # the caller's model object is left as it was


_QUICK: dict[str, Any] = {"initial_backoff": 0.001, "max_backoff": 0.01, "jitter": 0.0}


async def test_without_a_retry_option_the_model_keeps_its_own(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    for _ in range(6):
        sim.add(anth.SimFault(status=529))
    with pytest.raises(ProviderRetriesExhausted, match="failed after 5 retries"):
        await _ex(model).execute(NoBindings())
    assert len(sim.requests) == 6


def test_a_retry_option_for_a_model_without_retries_is_refused() -> None:
    scripted = ScriptedModel([])
    with pytest.raises(ExecutorConfigError, match="ScriptedModel has no retry policy"):
        _ex(scripted, options=ExecutorOptions(retry=RetryPolicy(max_retries=1)))
    _ex(scripted)  # no retry option: fine
