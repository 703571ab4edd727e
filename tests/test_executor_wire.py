"""The executor's per-model wire mapping: effort, thinking, temperature, the known 400s, warnings.

Through the official anthropic SDK against dive's Anthropic simulator; the request bodies the
simulator received are the assertions.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import Executor, ExecutorConfigError, ExecutorOptions, SubmitTool
from dive.llm import Model
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)

ENABLED_NOT_SUPPORTED = (
    '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)
TEMPERATURE_DEPRECATED = "`temperature` is deprecated for this model."


class Answer(BaseModel):
    ok: bool = False


@pytest.fixture
async def sim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


def _model(sim: anth.AnthropicSimulator, name: str) -> AnthropicModel:
    return AnthropicModel(name, base_url=sim.url, api_key="test", retry=FAST)


def _ex(model: Model, **options: Any) -> Executor[NoBindings, Answer]:
    return Executor(
        model,
        Prompt("Answer."),
        response_type=Answer,
        submit_tool=SubmitTool(),
        options=ExecutorOptions(**options),
    )


def _submit() -> Any:
    return anth.tool_use("submit_result", {"reasoning": "r", "result": {"ok": True}})


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    ("name", "effort", "sent", "warning"),
    [
        ("claude-opus-4-7", "xhigh", "xhigh", None),  # full scale
        ("claude-opus-4-8", "max", "max", None),
        ("claude-sonnet-4-6", "xhigh", "high", "clamping effort"),
        ("claude-opus-4-6", "xhigh", "high", "clamping effort"),
        ("claude-opus-4-6", "max", "max", None),
        ("claude-sonnet-4-6", "medium", "medium", None),
        ("claude-opus-4-1-20250805", "high", None, "dropping effort"),
        ("claude-haiku-4-5", "low", None, "dropping effort"),
    ],
)
async def test_effort_is_exact_clamped_or_dropped_per_model(
    sim: anth.AnthropicSimulator,
    caplog: pytest.LogCaptureFixture,
    name: str,
    effort: str,
    sent: str | None,
    warning: str | None,
) -> None:
    sim.add(_submit())
    model = _model(sim, name)
    with caplog.at_level(logging.WARNING):
        await _ex(model, effort=effort).execute(NoBindings())
    await model.aclose()
    body = sim.requests[0].body
    assert body.get("output_config", {}).get("effort") == sent
    found = [w for w in _warnings(caplog) if "effort" in w]
    if warning is None:
        assert found == []
    else:
        assert len(found) == 1
        assert found[0].startswith(warning)


async def test_a_budget_becomes_summarized_adaptive_thinking_on_adaptive_only_models(
    sim: anth.AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(_submit(), _submit())
    for name in ("claude-opus-4-7", "claude-sonnet-4-6"):
        model = _model(sim, name)
        with caplog.at_level(logging.WARNING):
            await _ex(model, thinking_budget=2048).execute(NoBindings())
        await model.aclose()
    adaptive, budget = (r.body["thinking"] for r in sim.requests)
    assert adaptive == {"type": "adaptive", "display": "summarized"}
    assert budget == {"type": "enabled", "budget_tokens": 2048}
    assert _warnings(caplog) == ["mapping thinking_budget to adaptive thinking"]


async def test_warnings_are_logged_once_per_execute(
    sim: anth.AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    # two executes on one model object, the first with two rounds: one warning each
    sim.add(anth.text("no tool"), _submit(), _submit())
    model = _model(sim, "claude-opus-4-7")
    ex = _ex(model, temperature=0.5)
    with caplog.at_level(logging.WARNING):
        await ex.execute(NoBindings())
        await ex.execute(NoBindings())
    await model.aclose()
    assert _warnings(caplog) == ["dropping temperature: not supported by this model"] * 2
    assert all("temperature" not in r.body for r in sim.requests)


async def test_the_default_temperature_is_dropped_without_a_warning(
    sim: anth.AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(_submit())
    model = _model(sim, "claude-opus-4-7")
    with caplog.at_level(logging.WARNING):
        await _ex(model).execute(NoBindings())  # the caller set no temperature
    await model.aclose()
    assert "temperature" not in sim.requests[0].body
    assert _warnings(caplog) == []


async def test_an_unknown_model_warns_once_per_execute_and_works(
    sim: anth.AnthropicSimulator, caplog: pytest.LogCaptureFixture
) -> None:
    sim.add(_submit(), _submit())
    model = _model(sim, "claude-nextgen-9")
    ex = _ex(model)
    with caplog.at_level(logging.WARNING):
        await ex.execute(NoBindings())
        await ex.execute(NoBindings())
    await model.aclose()
    expected = "unknown model 'claude-nextgen-9': using conservative capabilities"
    assert _warnings(caplog) == [expected] * 2
    assert sim.requests[0].body["temperature"] == 0.1


def test_the_temperature_range_is_the_providers() -> None:
    anthropic_model = AnthropicModel("claude-sonnet-4-6", api_key="test")
    with pytest.raises(ExecutorConfigError, match=r"between 0.0 and 1.0 for anthropic, got 1.5"):
        _ex(anthropic_model, temperature=1.5)
    _ex(anthropic_model, temperature=1.0)
    from dive.providers.openai import OpenAIResponsesModel

    openai_model = OpenAIResponsesModel("gpt-4.1", api_key="test")
    assert _ex(openai_model, temperature=1.5).options.temperature == 1.5


def _reject(message: str, when: str) -> Any:
    """A script item: a 400 with ``message`` when the request carries ``when``, else submit."""

    def answer(body: dict[str, Any]) -> Any:
        if when == "thinking" and body.get("thinking", {}).get("type") == "enabled":
            return anth.SimFault(status=400, message=message)
        if when == "temperature" and "temperature" in body:
            return anth.SimFault(status=400, message=message)
        return _submit()

    return answer


@pytest.mark.parametrize(
    ("message", "when", "options"),
    [
        (ENABLED_NOT_SUPPORTED, "thinking", {"thinking_budget": 2048}),
        (TEMPERATURE_DEPRECATED, "temperature", {"temperature": 0.3}),
    ],
)
async def test_the_two_known_400s_are_resent_once_with_the_fallback_and_remembered(
    sim: anth.AnthropicSimulator,
    caplog: pytest.LogCaptureFixture,
    message: str,
    when: str,
    options: dict[str, Any],
) -> None:
    # an id dive does not know (conservative: budgets and temperature allowed) that the API
    # treats as a newer model
    model = _model(sim, "claude-nextgen-9")
    ex = _ex(model, **options)
    sim.add(_reject(message, when), _reject(message, when), _reject(message, when))
    with caplog.at_level(logging.WARNING):
        assert (await ex.execute(NoBindings())).ok
        assert (await ex.execute(NoBindings())).ok  # remembered: no second 400
    await model.aclose()
    first, resent, second = (r.body for r in sim.requests)
    if when == "thinking":
        assert first["thinking"]["type"] == "enabled"
        assert resent["thinking"] == {"type": "adaptive", "display": "summarized"}
        assert second["thinking"] == {"type": "adaptive", "display": "summarized"}
    else:
        assert first["temperature"] == 0.3
        assert "temperature" not in resent
        assert "temperature" not in second


async def test_another_400_is_not_resent(sim: anth.AnthropicSimulator) -> None:
    from dive.errors import InvalidRequestError

    sim.add(anth.SimFault(status=400, message="messages: something else is wrong"))
    model = _model(sim, "claude-nextgen-9")
    with pytest.raises(InvalidRequestError, match="something else is wrong"):
        await _ex(model, thinking_budget=2048).execute(NoBindings())
    await model.aclose()
    assert len(sim.requests) == 1
