"""Typed dependencies (``deps_type``/``deps``) and dynamic instructions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dive import Agent, HookContext, Hooks, RunContext, ToolContext, tool
from dive.errors import InvalidRunError
from dive.testing import ScriptedModel, call, text, tool_use


@dataclass
class Deps:
    user: str
    greeting: str = "Hello"


@tool
async def whoami(ctx: ToolContext[Deps]) -> str:
    """Say who the user is."""
    return ctx.deps.user


async def test_tools_hooks_and_instructions_see_the_deps() -> None:
    seen: list[str] = []

    def hook(ctx: HookContext[Deps]) -> None:
        seen.append(f"hook:{ctx.deps.user}")

    def instructions(ctx: RunContext[Deps]) -> str:
        return f"The user is {ctx.deps.user}."

    model = ScriptedModel([tool_use(call("whoami", {})), text("done")])
    agent = Agent(
        model=model,
        tools=[whoami],
        deps_type=Deps,
        instructions=instructions,
        hooks=Hooks(pre_generation=[hook]),
    )
    result = await agent.run("who am I?", deps=Deps(user="ada"))
    assert result.status == "completed"
    first = result.tool_call_results()[0].result
    assert first is not None
    assert first.text == "ada"
    assert seen == ["hook:ada"]
    assert model.requests[0].system.startswith("The user is ada.")


async def test_missing_or_mistyped_deps_are_refused_before_the_turn() -> None:
    agent = Agent(model=ScriptedModel([text("x")]), deps_type=Deps)
    with pytest.raises(InvalidRunError, match=r"deps_type=Deps: pass run\(deps=\.\.\.\)"):
        await agent.run("hi")
    with pytest.raises(InvalidRunError, match="deps must be a Deps"):
        await agent.run("hi", deps="ada")  # type: ignore[arg-type]


async def test_dynamic_instructions_render_before_every_model_call() -> None:
    calls: list[int] = []

    async def step(ctx: RunContext[None]) -> str:
        calls.append(ctx.iteration)
        return f"Step {ctx.iteration}."

    model = ScriptedModel([tool_use(call("whoami", {})), text("done")])
    agent = Agent(
        model=model,
        tools=[whoami],
        deps_type=Deps,
        instructions=["You are terse.", step],  # type: ignore[list-item]
    )
    await agent.run("go", deps=Deps(user="x"))
    assert calls == [0, 1]
    systems = [r.system for r in model.requests]
    assert systems[0].startswith("You are terse.\n\nStep 0.")
    assert systems[1].startswith("You are terse.\n\nStep 1.")


async def test_unchanged_rendering_keeps_the_prompt_byte_for_byte() -> None:
    model = ScriptedModel([tool_use(call("whoami", {})), text("done")])
    agent = Agent(
        model=model,
        tools=[whoami],
        deps_type=Deps,
        instructions=lambda ctx: f"User: {ctx.deps.user}",
    )
    await agent.run("go", deps=Deps(user="ada"))
    first, second = (r.system for r in model.requests)
    assert first == second


async def test_a_hook_edit_around_the_rendering_is_kept() -> None:
    def pre(ctx: HookContext[None]) -> None:
        ctx.system_prompt = "PREFIX\n" + ctx.system_prompt

    counter = iter(range(10))
    model = ScriptedModel([tool_use(call("whoami", {})), text("done")])
    agent = Agent(
        model=model,
        tools=[whoami],
        deps_type=Deps,
        instructions=lambda ctx: f"n={next(counter)}",
        hooks=Hooks(pre_generation=[pre]),
    )
    await agent.run("go", deps=Deps(user="ada"))
    first, second = (r.system for r in model.requests)
    assert first.startswith("PREFIX\nn=0")
    assert second.startswith("PREFIX\nn=1")
    assert "n=0" not in second


async def test_instructions_that_return_a_non_string_fail_clearly() -> None:
    agent = Agent(model=ScriptedModel([text("x")]), instructions=lambda ctx: 3)  # type: ignore[arg-type,return-value]
    result = await agent.run("hi")
    assert result.status == "incomplete"
    assert "must return a string" in str(result.error)


def test_run_sync_passes_deps_and_text() -> None:
    chunks: list[str] = []
    agent = Agent(model=ScriptedModel([text("Hi ada")]), deps_type=Deps)
    result = agent.run_sync("hi", deps=Deps(user="ada"), on_text=chunks.append)
    assert result.output == "Hi ada"
    assert "".join(chunks) == "Hi ada"


def test_on_text_sees_text_of_a_model_that_does_not_stream() -> None:
    chunks: list[str] = []
    model = ScriptedModel([text("whole answer")], streaming=False)
    Agent(model=model).run_sync("hi", on_text=chunks.append)
    assert chunks == ["whole answer"]
