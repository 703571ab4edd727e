"""Typed outputs through the official SDKs against dive's Anthropic and OpenAI simulators."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
import dive.testing.openai as oai
from dive import Agent, ModelRetry
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class City(BaseModel):
    name: str
    population: int


class Country(BaseModel):
    name: str
    capital: str


@pytest.fixture
async def asim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
async def osim() -> AsyncIterator[oai.OpenAISimulator]:
    with oai.simulator(assert_consumed=True) as s:
        yield s


def _claude(sim: anth.AnthropicSimulator) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)


async def test_anthropic_tool_mode_with_a_validation_retry(asim: anth.AnthropicSimulator) -> None:
    asim.add(
        anth.tool_use("submit_result", {"result": "many"}),
        anth.tool_use("submit_result", {"result": [3, 1, 2]}),
    )
    model = _claude(asim)
    result = await Agent(model=model, output_type=list[int]).run("numbers?")
    await model.aclose()
    assert result.output == [3, 1, 2]
    tools = asim.requests[0]["tools"]
    assert tools[-1]["name"] == "submit_result"
    assert tools[-1]["input_schema"]["properties"]["result"]["type"] == "array"
    last = asim.requests[1]["messages"][-1]["content"]
    assert any(b.get("is_error") for b in last if b["type"] == "tool_result")


async def test_anthropic_union_of_two_models(asim: anth.AnthropicSimulator) -> None:
    asim.add(anth.tool_use("submit_result_City", {"name": "Oslo", "population": 700000}))
    model = _claude(asim)
    agent = Agent(model=model, output_type=[City, Country])
    result = await agent.run("a place")
    await model.aclose()
    assert result.output == City(name="Oslo", population=700000)
    names = [t["name"] for t in asim.requests[0]["tools"]]
    assert names[-2:] == ["submit_result_City", "submit_result_Country"]


async def test_anthropic_native_mode_sends_output_config_format(
    asim: anth.AnthropicSimulator,
) -> None:
    asim.add(json.dumps({"name": "Oslo", "population": 1}))
    model = _claude(asim)
    result = await Agent(model=model, output_type=City, output_mode="native").run("city")
    await model.aclose()
    assert result.output == City(name="Oslo", population=1)
    fmt = asim.requests[0]["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert set(fmt["schema"]["properties"]) == {"name", "population"}
    assert "tools" not in asim.requests[0]


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_openai_tool_mode_with_a_validator_retry(
    osim: oai.OpenAISimulator, api: Literal["responses", "chat"]
) -> None:
    osim.add(
        oai.tool_call("submit_result", {"result": 3}),
        oai.tool_call("submit_result", {"result": 12}),
    )
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-4.1", base_url=osim.url, api_key="test", retry=FAST)

    def big(value: int) -> int:
        if value < 10:
            raise ModelRetry("Pick a number of at least 10.")
        return value

    result = await Agent(model=model, output_type=int, output_validators=[big]).run("n?")
    await model.aclose()
    assert result.output == 12
    second = json.dumps(osim.requests[1].body)
    assert "at least 10" in second


@pytest.mark.parametrize("api", ["responses", "chat"])
async def test_openai_native_mode(
    osim: oai.OpenAISimulator, api: Literal["responses", "chat"]
) -> None:
    osim.add(json.dumps({"result": "green"}))
    cls = OpenAIChatModel if api == "chat" else OpenAIResponsesModel
    model = cls("gpt-4.1", base_url=osim.url, api_key="test", retry=FAST)
    agent: Agent[Any] = Agent(
        model=model,
        output_type=Literal["red", "green"],
        output_mode="native",
    )
    result = await agent.run("colour?")
    await model.aclose()
    assert result.output == "green"
    body = osim.requests[0].body
    fmt = body["text"]["format"] if api == "responses" else body["response_format"]
    schema = fmt["schema"] if api == "responses" else fmt["json_schema"]["schema"]
    assert schema["properties"]["result"]["enum"] == ["red", "green"]
