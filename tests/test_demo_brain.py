"""``demo_brain``: the simulator's offline stand-in, driven through the official SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


async def test_a_tool_named_verbatim_is_called_with_its_key_value_pairs(
    sim: AnthropicSimulator, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    agent = _agent(sim, tmp_path)
    result = await agent.run('call Read with file_path=a.txt limit=2 and nothing="ignored"')
    call = result.turn.messages[1].tool_calls[0]
    assert (call.name, dict(call.arguments)) == ("Read", {"file_path": "a.txt", "limit": 2})
    assert "two" in result.output_text
    assert "three" not in result.output_text


def test_a_compaction_request_gets_an_extract_that_keeps_what_the_user_said() -> None:
    transcript = (
        "Here is the conversation so far:\n<transcript>\n"
        "<user>\nmy name is Ada\n</user>\n"
        '<assistant>\nI\'ll look.\n[tool call ListDirectory id=t1] {"path": "."}\n</assistant>\n'
        "<user>\n[tool result ListDirectory id=t1] a.txt\n</user>\n"
        "</transcript>"
    )
    body: dict[str, Any] = {"messages": [{"role": "user", "content": transcript}]}
    reply = demo_brain(body)
    [block] = reply.content
    text = str(dict(block)["text"])
    assert text.startswith("<summary>")
    assert "- the user said: my name is Ada" in text
    assert '- the agent called ListDirectory {"path": "."}' in text
    assert "tool result" not in text
    later_ask = (  # a summary of a summary keeps the earlier lines
        f"Here is the summary of the conversation so far:\n{text}\n\n"
        "And here is how it continued:\n<transcript>\n<user>\nhello\n</user>\n</transcript>"
    )
    again = demo_brain({"messages": [{"role": "user", "content": later_ask}]})
    later = str(dict(again.content[0])["text"])
    assert "- the user said: my name is Ada" in later
    assert "- the user said: hello" in later


def test_what_was_said_before_reads_through_a_compaction_summary() -> None:
    summary = (
        "The earlier part was compacted.\n\n<summary>\n- the user said: my name is Ada\n</summary>"
    )
    body: dict[str, Any] = {
        "messages": [
            {"role": "user", "content": summary},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "what did I say before?"},
        ]
    }
    text = str(dict(demo_brain(body).content[0])["text"])
    assert "- my name is Ada" in text
    assert "compacted" not in text
    merged = [  # consecutive user messages reach the wire as one, block by block
        {"type": "text", "text": "hello"},
        {"type": "text", "text": summary},
        {"type": "text", "text": "what did I say before?"},
    ]
    text = str(
        dict(demo_brain({"messages": [{"role": "user", "content": merged}]}).content[0])["text"]
    )
    assert "said:\n\n- hello\n- my name is Ada" in text


_INTS = st.integers(min_value=-50, max_value=50)


def _expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        _INTS.map(lambda n: f"({n})" if n < 0 else str(n)),
        lambda inner: st.tuples(inner, st.sampled_from("+-*"), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"
        ),
        max_leaves=8,
    )


@given(_expressions())
def test_arithmetic_agrees_with_python(expr: str) -> None:
    from dive.testing.anthropic._brain import _compute  # pyright: ignore[reportPrivateUsage]

    assert _compute(expr) == str(eval(expr))


@settings(max_examples=60)
@given(st.text(max_size=300))
def test_any_ask_gets_a_reply(ask: str) -> None:
    tools = [
        {"name": n, "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
        for n in ("ListDirectory", "Read", "mcp__x__do_it")
    ]
    reply = demo_brain({"messages": [{"role": "user", "content": ask}], "tools": tools})
    assert reply.stop_reason in ("end_turn", "tool_use")
    assert reply.content


def test_a_second_compaction_keeps_the_first_summary_lines() -> None:
    earlier = (
        "The earlier part was compacted.\n\n<summary>\n- the user said: my name is Ada\n</summary>"
    )
    transcript = (
        "Here is the conversation so far:\n<transcript>\n"
        f"<summary of earlier conversation>\n{earlier}\n</summary of earlier conversation>\n"
        "<user>\nlist the files\n</user>\n</transcript>"
    )
    text = str(
        dict(demo_brain({"messages": [{"role": "user", "content": transcript}]}).content[0])["text"]
    )
    assert "- the user said: my name is Ada\n- the user said: list the files" in text
