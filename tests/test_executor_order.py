"""Terminal outcomes of one round are consumed in model order, never in completion order.

Through the official anthropic SDK against dive's Anthropic simulator: the handlers finish in
the opposite order of the model's calls, and the first terminal outcome *in model order* wins.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    AbortExecution,
    Commit,
    Executor,
    ExecutorError,
    ExecutorOptions,
    ExecutorTool,
    ExecutorToolContext,
    SubmitTool,
)
from dive.messages import ToolCall, ToolDefinition
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.tools import Suspend

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Answer(BaseModel):
    value: str = ""


@pytest.fixture
async def sim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
async def model(sim: anth.AnthropicSimulator) -> AsyncIterator[AnthropicModel]:
    m = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test", retry=FAST)
    yield m
    await m.aclose()


def _ex(model: AnthropicModel, **kwargs: Any) -> Executor[NoBindings, Answer]:
    kwargs.setdefault("submit_tool", SubmitTool())
    return Executor(model, Prompt("Answer."), response_type=Answer, **kwargs)


def _tool(
    name: str, *, wait: asyncio.Event | None = None, abort: bool = False
) -> ExecutorTool[Any]:
    """A tool that commits (or aborts) with its own name, after ``wait`` is set."""

    async def handler(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
        if wait is not None:
            await wait.wait()
        if abort:
            raise AbortExecution(f"{name} aborted")
        return Commit(Answer(value=name))

    definition = ToolDefinition(
        name=name, description=f"Decide as {name}.", input_schema={"type": "object"}
    )
    return ExecutorTool(definition=definition, handler=handler)


def _releaser(event: asyncio.Event) -> ExecutorTool[Any]:
    """A tool that finishes at once and lets the slower ones go."""

    async def handler(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
        event.set()
        return Commit(Answer(value="fast"))

    definition = ToolDefinition(name="fast", description="Decide fast.", input_schema={})
    return ExecutorTool(definition=definition, handler=handler)


def _round(*names: str, submit: str | None = None) -> Any:
    blocks = [anth.tool_use_block(n, {}) for n in names]
    if submit is not None:
        result = {"reasoning": "r", "result": {"value": submit}}
        blocks.insert(0, anth.tool_use_block("submit_result", result))
    return anth.reply(blocks=blocks)


async def test_a_slow_commit_before_a_fast_one_wins(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    released = asyncio.Event()
    tools = {"slow": _tool("slow", wait=released), "fast": _releaser(released)}
    sim.add(_round("slow", "fast"))
    answer = await _ex(model).execute(NoBindings(), tools=tools)
    assert answer.value == "slow"


async def test_an_abort_before_a_commit_raises_the_abort(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    released = asyncio.Event()
    tools = {"slow": _tool("slow", wait=released, abort=True), "fast": _releaser(released)}
    sim.add(_round("slow", "fast"))
    with pytest.raises(ExecutorError, match="slow aborted"):
        await _ex(model).execute(NoBindings(), tools=tools)


async def test_a_commit_before_an_abort_returns_the_commit(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    released = asyncio.Event()
    tools = {"slow": _tool("slow", wait=released), "fast": _releaser(released)}

    async def aborting(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
        released.set()
        raise AbortExecution("too late")

    definition = ToolDefinition(name="fast", description="Abort fast.", input_schema={})
    tools["fast"] = ExecutorTool(definition=definition, handler=aborting)
    sim.add(_round("slow", "fast"))
    answer = await _ex(model).execute(NoBindings(), tools=tools)
    assert answer.value == "slow"


async def test_a_pooled_commit_never_overrides_an_earlier_submission(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    # the submission is first in model order but runs last (held out): it still wins
    sim.add(_round("later", submit="submitted"))
    answer = await _ex(model).execute(NoBindings(), tools={"later": _tool("later")})
    assert answer.value == "submitted"


async def test_a_pooled_commit_before_a_submission_wins(
    sim: anth.AnthropicSimulator, model: AnthropicModel
) -> None:
    blocks = [
        anth.tool_use_block("first", {}),
        anth.tool_use_block("submit_result", {"reasoning": "r", "result": {"value": "second"}}),
    ]
    sim.add(anth.reply(blocks=blocks))
    answer = await _ex(model).execute(NoBindings(), tools={"first": _tool("first")})
    assert answer.value == "first"


def _ask() -> ExecutorTool[Any]:
    async def ask(call: ToolCall, ctx: ExecutorToolContext[Any]) -> Any:
        return Suspend("Ship it?")

    definition = ToolDefinition(name="ask_human", description="Ask a person.", input_schema={})
    return ExecutorTool(definition=definition, handler=ask)


@pytest.mark.parametrize("suspend_first", [True, False])
async def test_a_submission_beats_a_suspension_of_the_same_round(
    sim: anth.AnthropicSimulator, model: AnthropicModel, suspend_first: bool
) -> None:
    blocks = [
        anth.tool_use_block("submit_result", {"reasoning": "r", "result": {"value": "done"}}),
    ]
    ask = anth.tool_use_block("ask_human", {})
    blocks.insert(0 if suspend_first else 1, ask)
    sim.add(anth.reply(blocks=blocks))
    ex = _ex(model, suspend_tool=_ask(), options=ExecutorOptions(max_rounds=3))
    answer = await ex.execute(NoBindings())
    assert answer.value == "done"
