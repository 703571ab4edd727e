"""Typed outputs of any type pydantic validates, in tool, native and prompted modes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from dive import Agent, ModelRetry, RunContext
from dive.errors import OutputUnavailableError, OutputValidationError, UserError
from dive.messages import ToolResult
from dive.testing import ScriptedModel, call, text, tool_use


class City(BaseModel):
    name: str
    population: int


class Country(BaseModel):
    name: str
    capital: str


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Span:
    start: int
    end: int


def _submit(value: Any, name: str = "submit_result") -> Any:
    return tool_use(call(name, {"result": value}))


@pytest.mark.parametrize(
    ("output_type", "value"),
    [
        (int, 42),
        (bool, False),
        (list[int], [1, 2, 3]),
        (dict[str, int], {"a": 1}),
        (Literal["red", "green"], "green"),
        (int | None, None),
    ],
)
async def test_wrapped_types_through_the_submit_tool(output_type: Any, value: Any) -> None:
    model = ScriptedModel([_submit(value)])
    agent: Agent[Any] = Agent(model=model, output_type=output_type)
    (definition,) = [d for d in agent.tool_definitions if d.name == "submit_result"]
    assert definition.input_schema["required"] == ["result"]
    result = await agent.run("go")
    assert result.status == "completed"
    assert result.has_output
    assert result.output == value
    assert type(result.output) is type(value)


@pytest.mark.parametrize(
    ("output_type", "arguments", "expected"),
    [
        (City, {"name": "Oslo", "population": 700000}, City(name="Oslo", population=700000)),
        (Point, {"x": 1, "y": 2}, {"x": 1, "y": 2}),
        (Span, {"start": 1, "end": 5}, Span(1, 5)),
    ],
)
async def test_object_types_are_the_tool_input(
    output_type: Any, arguments: dict[str, Any], expected: Any
) -> None:
    model = ScriptedModel([tool_use(call("submit_result", arguments))])
    agent: Agent[Any] = Agent(model=model, output_type=output_type)
    (definition,) = [d for d in agent.tool_definitions if d.name == "submit_result"]
    properties: Any = definition.input_schema.get("properties", {})
    assert "result" not in properties
    result = await agent.run("go")
    assert result.output == expected


async def test_a_union_of_models_gets_one_tool_per_member() -> None:
    model = ScriptedModel(
        [tool_use(call("submit_result_Country", {"name": "Norway", "capital": "Oslo"}))]
    )
    agent = Agent(model=model, output_type=[City, Country])
    names = {d.name for d in agent.tool_definitions}
    assert {"submit_result_City", "submit_result_Country"} <= names
    result = await agent.run("go")
    assert result.output == Country(name="Norway", capital="Oslo")


async def test_str_output_is_the_final_text() -> None:
    agent = Agent(model=ScriptedModel([text("Hello there.")]))
    result = await agent.run("hi")
    assert result.output == "Hello there."
    assert not agent.tool_definitions


async def test_an_invalid_submission_is_retried_then_accepted() -> None:
    model = ScriptedModel([_submit("not a number"), _submit(7)])
    result = await Agent(model=model, output_type=int).run("go")
    assert result.output == 7
    seen = model.requests[1].messages[-1].content[0]
    assert isinstance(seen, ToolResult)
    assert seen.is_error


async def test_validator_retry_sends_the_message_and_counts() -> None:
    model = ScriptedModel([_submit(3), _submit(12)])
    agent = Agent(model=model, output_type=int)

    @agent.output_validator
    def at_least_ten(value: int) -> int:
        if value < 10:
            raise ModelRetry("The number must be at least 10.")
        return value

    result = await agent.run("go")
    assert result.output == 12
    assert "at least 10" in model.requests[1].messages[-1].text


async def test_validator_may_change_the_output_and_sees_deps() -> None:
    async def scale(ctx: RunContext[int], value: int) -> int:
        return value * ctx.deps

    model = ScriptedModel([_submit(3)])
    agent = Agent(model=model, output_type=int, deps_type=int, output_validators=[scale])
    result = await agent.run("go", deps=10)
    assert result.output == 30


async def test_validator_retries_exhausted_end_incomplete() -> None:
    model = ScriptedModel([_submit(1), _submit(2)])

    def never(value: int) -> int:
        raise ModelRetry("no")

    agent = Agent(model=model, output_type=int, output_validators=[never], output_retries=1)
    result = await agent.run("go")
    assert result.status == "incomplete"
    assert isinstance(result.error, OutputValidationError)
    with pytest.raises(OutputUnavailableError, match="incomplete"):
        _ = result.output
    assert result.output_or(None) is None


async def test_str_output_validators_retry_with_a_message() -> None:
    model = ScriptedModel([text("short"), text("a much longer answer")])

    def long_enough(value: str) -> str:
        if len(value) < 10:
            raise ModelRetry("Write at least ten characters.")
        return value

    agent = Agent(model=model, output_validators=[long_enough])
    result = await agent.run("go")
    assert result.output == "a much longer answer"
    assert "ten characters" in model.requests[1].messages[-1].text


async def test_native_mode_sends_the_schema_and_parses_the_answer() -> None:
    model = ScriptedModel([text(json.dumps({"name": "Oslo", "population": 5}))])
    agent = Agent(model=model, output_type=City, output_mode="native")
    assert not agent.tool_definitions
    result = await agent.run("go")
    assert result.output == City(name="Oslo", population=5)
    settings = model.requests[0].settings
    assert settings.response_schema is not None
    assert set(settings.response_schema["properties"]) == {"name", "population"}  # type: ignore[arg-type]
    assert settings.response_schema_name == "City"


async def test_native_mode_wraps_non_objects_and_retries_bad_json() -> None:
    model = ScriptedModel([text("forty-two"), text('{"result": 42}')])
    result = await Agent(model=model, output_type=int, output_mode="native").run("go")
    assert result.output == 42
    assert "not JSON" in model.requests[1].messages[-1].text


async def test_prompted_mode_puts_the_schema_in_the_prompt_and_reads_fenced_json() -> None:
    answer = 'Here it is:\n```json\n{"name": "Oslo", "population": 7}\n```'
    model = ScriptedModel([text(answer)])
    agent = Agent(model=model, output_type=City, output_mode="prompted")
    result = await agent.run("go")
    assert result.output == City(name="Oslo", population=7)
    assert '"population"' in model.requests[0].system
    assert model.requests[0].settings.response_schema is None


async def test_text_instead_of_the_tool_is_answered_with_a_reminder() -> None:
    model = ScriptedModel([text("It is Oslo."), _submit(1)])
    result = await Agent(model=model, output_type=int).run("go")
    assert result.output == 1
    assert "submit_result" in model.requests[1].messages[-1].text


def test_bad_output_mode_and_validator_shapes_are_refused() -> None:
    with pytest.raises(UserError, match="output_mode"):
        Agent(model=ScriptedModel(), output_type=int, output_mode="json")  # type: ignore[arg-type]

    def three(a: Any, b: Any, c: Any) -> Any:
        return a

    with pytest.raises(UserError, match=r"\(ctx, output\)"):
        Agent(model=ScriptedModel(), output_type=int, output_validators=[three])  # pyright: ignore[reportArgumentType]


async def test_a_written_union_works_like_the_list_form() -> None:
    model = ScriptedModel([tool_use(call("submit_result_City", {"name": "A", "population": 1}))])
    agent: Agent[City | Country] = Agent(model=model, output_type=City | Country)
    assert (await agent.run("go")).output == City(name="A", population=1)
