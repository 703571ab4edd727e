"""C1: prompt caching on a 20-turn tool loop against the Anthropic simulator.

The agent (a long system prompt, three tools) makes 20 model calls: 19 tool rounds and a final
answer. Reported: the share of input tokens billed uncached on calls 2-20 (goal <= 10%), and
the cost with dive's default caching vs ``caching=False``.
"""

from __future__ import annotations

import asyncio
import warnings

from benchmarks._report import Row
from dive.agent import Agent, AgentEvent, MessageEvent
from dive.llm import ModelSettings, Usage
from dive.llm._pricing import PricingInfo
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.testing.anthropic import AnthropicSimulator, reply, text, tool_use_block
from dive.tools import tool

MODEL = "claude-sonnet-4-6"
SONNET = PricingInfo(input_per_mtok=3.0, output_per_mtok=15.0)
SYSTEM = "You are a careful research assistant. " + " ".join(
    f"Rule {i}: cite the tool output you rely on, keep numbers exact, and say when unsure."
    for i in range(160)
)


@tool(effect_type="read_only")
async def lookup(topic: str) -> str:
    """Look a topic up in the knowledge base."""
    return f"Facts about {topic}: " + "; ".join(f"fact {i} on {topic}" for i in range(40))


@tool(effect_type="read_only")
async def fetch(url: str) -> str:
    """Fetch a page."""
    return f"<page {url}> " + "lorem ipsum " * 60


@tool(effect_type="read_only")
async def compute(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return expression


async def _run(caching: bool) -> list[Usage]:
    usages: list[Usage] = []

    def collect(event: AgentEvent) -> None:
        if isinstance(event, MessageEvent):
            usages.append(event.usage)

    with AnthropicSimulator() as sim:
        names = ["lookup", "fetch", "compute"]
        for i in range(19):
            name = names[i % 3]
            args = {
                "lookup": {"topic": f"topic {i}"},
                "fetch": {"url": f"https://x/{i}"},
                "compute": {"expression": f"{i} * 7"},
            }[name]
            sim.add(reply(blocks=[tool_use_block(name, args)]))
        sim.add(text("Here is the summary of everything found."))
        model = AnthropicModel(
            MODEL,
            base_url=sim.url,
            api_key="bench",
            retry=RetryPolicy(max_retries=0),
            pricing=SONNET,
        )
        agent = Agent(
            model=model,
            instructions=SYSTEM,
            tools=[lookup, fetch, compute],
            model_settings=ModelSettings(caching=caching),
        )
        result = await agent.run("Research the 19 items and summarise.", on_event=collect)
        assert result.status == "completed", result.outcome
    return usages


def run_all(*, quick: bool = False) -> list[Row]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cached = asyncio.run(_run(True))
        plain = asyncio.run(_run(False))
    later = cached[1:]
    uncached = sum(u.input_tokens for u in later)
    total_in = sum(u.total_input_tokens for u in later)
    share = uncached / total_in if total_in else 1.0
    cost_cached = sum(u.cost or 0.0 for u in cached)
    cost_plain = sum(u.cost or 0.0 for u in plain)
    written = sum(u.cache_creation_input_tokens for u in later)
    read = sum(u.cache_read_input_tokens for u in later)
    saving = 1 - cost_cached / cost_plain if cost_plain else None
    return [
        Row(
            "C1 uncached input share, calls 2-20",
            f"{share:.1%}",
            "<= 10%",
            share <= 0.10,
            share * 100,
            "%",
        ),
        Row(
            "C1 cache-write share, calls 2-20",
            f"{written / total_in:.1%}",
            "-",
            True,
            written / total_in * 100,
            "%",
        ),
        Row(
            "C1 cache-read share, calls 2-20",
            f"{read / total_in:.1%}",
            "-",
            True,
            read / total_in * 100,
            "%",
            "higher",
        ),
        Row("C1 cost, default caching", f"${cost_cached:.4f}", "-", True, cost_cached, "$"),
        Row("C1 cost, caching disabled", f"${cost_plain:.4f}", "-", True, cost_plain, "$"),
        Row(
            "C1 saving",
            f"{saving:.0%}" if saving is not None else "-",
            "-",
            True,
            None if saving is None else saving * 100,
            "%",
            "higher",
        ),
    ]
