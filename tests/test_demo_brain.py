"""``demo_brain``: the simulator's offline stand-in, driven through the official SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dive import Agent, ModelSettings
from dive.permissions import PermissionConfig, permission_policy
from dive.providers.anthropic import AnthropicModel
from dive.testing.anthropic import AnthropicSimulator, demo_brain
from dive.toolkit import AskUser, Bash, file_tools

_OPEN: list[AnthropicModel] = []


@pytest.fixture
async def sim() -> AsyncIterator[AnthropicSimulator]:
    """The simulator with the demo fallback; the models made against it are closed after."""
    with AnthropicSimulator(fallback=demo_brain) as s:
        try:
            yield s
        finally:
            while _OPEN:
                await _OPEN.pop().aclose()


def _model(sim: AnthropicSimulator) -> AnthropicModel:
    model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="test")
    _OPEN.append(model)
    return model


def _agent(sim: AnthropicSimulator, root: Path, **options: Any) -> Agent[str, None]:
    model = _model(sim)
    config = PermissionConfig.from_rules(mode="bypass", workspace=root)
    return Agent(
        model=model,
        tools=[*file_tools(root), Bash(root), AskUser()],
        approval_policy=permission_policy(config),
        **options,
    )


def _names(result: Any) -> list[str]:
    return [c.name for c in result.turn.tool_calls]


async def test_it_calls_the_tools_the_ask_names_in_order(
    sim: AnthropicSimulator, tmp_path: Path
) -> None:
    (tmp_path / "README.md").write_text("# Title\nbody\n")
    agent = _agent(sim, tmp_path)
    result = await agent.run("read README.md, then run `echo done-here`")
    assert result.status == "completed"
    assert _names(result) == ["Read", "Bash"]
    assert "# Title" in result.output_text
    assert "done-here" in result.output_text
    assert result.usage.cost is not None
    assert result.usage.cost > 0


@pytest.mark.parametrize(
    ("ask", "tool", "arguments"),
    [
        ("list the files", "ListDirectory", {"path": "."}),
        (
            "write notes.txt with buy milk",
            "Write",
            {"file_path": "notes.txt", "content": "buy milk\n"},
        ),
        ("search for TODO", "Grep", {"pattern": "TODO"}),
        ("find *.py", "Glob", {"pattern": "*.py"}),
        ("$ ls -a", "Bash", {"command": "ls -a"}),
    ],
)
async def test_each_pattern_picks_its_tool(
    sim: AnthropicSimulator, tmp_path: Path, ask: str, tool: str, arguments: dict[str, Any]
) -> None:
    result = await _agent(sim, tmp_path).run(ask)
    assert result.status == "completed"
    call = result.turn.messages[1].tool_calls[0]
    assert (call.name, dict(call.arguments)) == (tool, arguments)


async def test_without_a_tool_it_computes_and_remembers(
    sim: AnthropicSimulator, tmp_path: Path
) -> None:
    agent = _agent(sim, tmp_path)
    first = await agent.run("my name is Ada")
    assert "Nice to meet you, Ada" in first.output_text
    second = await agent.run("what is (2 + 3) * 4? and what did I say before?",
                             history=first.all_messages())  # fmt: skip
    assert _names(second) == []
    assert "**20**" in second.output_text
    assert "- my name is Ada" in second.output_text


async def test_a_refused_call_ends_the_plan(sim: AnthropicSimulator, tmp_path: Path) -> None:
    model = _model(sim)
    config = PermissionConfig.from_rules(deny=["Bash"], mode="bypass", workspace=tmp_path)
    agent = Agent(model=model, tools=[*file_tools(tmp_path), Bash(tmp_path)],
                  approval_policy=permission_policy(config))  # fmt: skip
    result = await agent.run("run `echo one` and list the files")
    assert _names(result) == ["Bash"]  # the listing is not attempted after the denial
    assert "did not succeed" in result.output_text


async def test_ask_me_suspends_on_ask_user(sim: AnthropicSimulator, tmp_path: Path) -> None:
    result = await _agent(sim, tmp_path).run("ask me which colour to use")
    assert result.status == "suspended"
    assert result.turn.suspension is not None
    assert result.turn.suspension.pending_tool_calls[0].prompt == "which colour to use?"


async def test_with_thinking_it_starts_with_a_signed_thinking_block(
    sim: AnthropicSimulator, tmp_path: Path
) -> None:
    agent = _agent(sim, tmp_path, model_settings=ModelSettings(thinking="enabled"))
    result = await agent.run("list the files")
    assert result.status == "completed"
    first = result.turn.messages[1].content[0]
    assert first.type == "thinking"
    assert sim.issued_thinking(first.signature) is not None


async def test_with_no_tools_it_says_what_it_is(sim: AnthropicSimulator) -> None:
    result = await Agent(model=_model(sim)).run("explain quantum field theory")
    assert "offline demo model" in result.output_text
    assert "not a language model" in result.output_text
