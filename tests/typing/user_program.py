"""A user's program, checked by pyright strict with the rest of the tests (never run).

Each ``assert_type`` states what a user's editor must infer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, assert_type

from pydantic import BaseModel

from dive import Agent, HookContext, RunContext, RunResult, ToolContext, tool
from dive.testing import ScriptedModel


class Forecast(BaseModel):
    city: str
    high: int


@dataclass
class Deps:
    user: str


@tool
async def whoami(ctx: ToolContext[Deps]) -> str:
    """Who the user is."""
    assert_type(ctx.deps, Deps)
    return ctx.deps.user


def instructions(ctx: RunContext[Deps]) -> str:
    assert_type(ctx.deps, Deps)
    return f"The user is {ctx.deps.user}."


def hook(ctx: HookContext[Deps]) -> None:
    assert_type(ctx.deps, Deps)


async def main() -> None:
    model = ScriptedModel()
    typed = Agent(model=model, output_type=int, deps_type=Deps, instructions=instructions)
    assert_type(typed, Agent[int, Deps])
    result = await typed.run("n?", deps=Deps(user="ada"))
    assert_type(result, RunResult[int])
    assert_type(result.output, int)
    assert_type(result.output_or(None), int | None)

    forecast = Agent(model=model, output_type=Forecast)
    assert_type((await forecast.run("weather")).output, Forecast)

    plain = Agent(model=model)
    assert_type(plain.run_sync("hi").output, str)

    async with forecast.stream("weather") as s:
        async for partial in s.partial_output():
            assert_type(partial, Forecast)
        async for delta in s.text_deltas():
            assert_type(delta, str)
    assert_type(s.result.output, Forecast)


class Other(BaseModel):
    name: str


def unions() -> None:
    model = ScriptedModel()
    either = Agent(model=model, output_type=[Forecast, Other])
    assert_type(either, Agent[Forecast | Other, None])
    yes_no: Agent[Literal["yes", "no"]] = Agent(model=model, output_type=Literal["yes", "no"])
    assert_type(yes_no.run_sync("?").output, Literal["yes", "no"])
