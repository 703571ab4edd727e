"""Typed output, validators, typed dependencies, dynamic instructions and streaming.

Runs offline with dive's scripted model: ``uv run python examples/typed_output.py``.
Swap in ``dive.model("anthropic:claude-sonnet-4-6")`` (and drop the scripts) for a real one.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import date

from pydantic import BaseModel

from dive import Agent, ModelRetry, RunContext, ToolContext, tool
from dive.testing import ScriptedModel, call, text, tool_use


class Forecast(BaseModel):
    city: str
    high: int
    summary: str = ""


@dataclass
class Deps:
    cities: tuple[str, ...]
    unit: str = "C"


@tool(effect_type="read_only")
async def station(ctx: ToolContext[Deps], city: str) -> str:
    """Today's reading of the weather station in ``city``."""
    return f"{city}: 21 {ctx.deps.unit}, clear"


def today(ctx: RunContext[Deps]) -> str:
    return f"Today is {date.today()}. Known cities: {', '.join(ctx.deps.cities)}."


async def main() -> None:
    model = ScriptedModel(
        [
            tool_use(call("station", {"city": "Oslo"})),
            tool_use(call("submit_result", {"city": "Atlantis", "high": 30})),
            tool_use(call("submit_result", {"city": "Oslo", "high": 21, "summary": "Clear"})),
        ]
    )
    agent = Agent(
        model=model,
        output_type=Forecast,
        deps_type=Deps,
        instructions=["You write weather forecasts.", today],
        tools=[station],
    )

    @agent.output_validator
    def known(ctx: RunContext[Deps], forecast: Forecast) -> Forecast:
        if forecast.city not in ctx.deps.cities:
            raise ModelRetry(f"Use one of the known cities: {', '.join(ctx.deps.cities)}")
        return forecast

    deps = Deps(cities=("Oslo", "Bergen"))
    result = await agent.run("Forecast for Oslo?", deps=deps)
    forecast: Forecast = result.output  # typed: Forecast
    print("forecast:", forecast)
    print("usage:", result.usage)

    # streaming: the answer's text as it arrives, then the typed output of a native-mode agent
    native = Agent(
        model=ScriptedModel([text(json.dumps({"city": "Bergen", "high": 12}))]),
        output_type=Forecast,
        output_mode="native",
    )
    async with native.stream("Bergen?") as s:
        async for partial in s.partial_output():
            print("partial:", partial)
    print("final:", s.result.output)


if __name__ == "__main__":
    asyncio.run(main())
