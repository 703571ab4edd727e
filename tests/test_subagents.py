"""Subagents: foreground and background runs, restrictions, usage, suspension, links, TaskStop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dive.agent import Agent, BackgroundTaskHandle, allow, await_background_tasks, deny
from dive.errors import UserError
from dive.llm import Usage
from dive.messages.codec import decode, dumps
from dive.otel import OTelTracer
from dive.sessions import MemorySessionStore
from dive.subagents import (
    EXPLORE,
    SINGLE_USE_TEXT,
    SubagentDefinition,
    Subagents,
    load_subagents,
)
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, ToolAnnotations, tool
from dive.turns import Turn, find_reminder

USED = Usage(input_tokens=100, output_tokens=20, requests=1, cost=0.01)


def used(content: str) -> Any:
    return text(content, usage=USED)


@tool(annotations=ToolAnnotations(read_only=True))
def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


WRITES: list[str] = []


@tool(annotations=ToolAnnotations(destructive=True))
def write(path: str, text: str) -> str:
    """Write a file."""
    WRITES.append(path)
    return "written"


def agent_call(
    prompt: str,
    kind: str = "general-purpose",
    *,
    id: str = "a1",
    background: bool = False,
) -> Any:
    args: dict[str, Any] = {"prompt": prompt, "description": "a task", "subagent_type": kind}
    if background:
        args["run_in_background"] = True
    return tool_use(call("Agent", args, id=id), usage=USED)


def sub_def(model: ScriptedModel, **kw: Any) -> SubagentDefinition:
    return SubagentDefinition(
        name=kw.pop("name", "worker"),
        description="Does work.",
        prompt="You work.",
        model=model,
        **kw,
    )


async def test_a_foreground_subagent_answers_and_its_usage_joins_the_parent_turn() -> None:
    sub_model = ScriptedModel(
        [tool_use(call("read", {"path": "a.py"}, id="r1"), usage=USED), used("a.py defines f")]
    )
    parent_model = ScriptedModel([agent_call("find f", "worker"), used("f is in a.py")])
    ext = Subagents([sub_def(sub_model)])
    parent = Agent(model=parent_model, tools=[read, write], extensions=[ext])
    result = await parent.run("where is f?")
    assert result.status == "completed"
    assert result.output_text == "f is in a.py"
    answer = result.tool_call_results()[0].result
    assert answer is not None
    assert answer.text == "a.py defines f"
    # the subagent's two model calls are in the parent turn's usage and cost
    assert result.usage.requests == 4
    assert result.turn.usage.cost == pytest.approx(0.04)
    # the parent's model is told which subagents exist
    (agent_def,) = [d for d in parent_model.requests[0].tools if d.name == "Agent"]
    assert "worker: Does work." in agent_def.description
    assert "Use the Agent tool" in parent_model.requests[0].system
    # the subagent ran with its own instructions and without the Agent tool
    assert sub_model.requests[0].system.startswith("You work.")
    assert sorted(d.name for d in sub_model.requests[0].tools) == ["read", "write"]


async def test_restrictions_are_enforced_inside_the_subagent() -> None:
    WRITES.clear()
    sub_model = ScriptedModel(
        [
            tool_use(call("write", {"path": "x", "text": "y"}, id="w1")),
            used("could not write"),
            tool_use(call("write", {"path": "x", "text": "y"}, id="w2")),
            used("denied"),
        ]
    )
    parent_model = ScriptedModel(
        [
            agent_call("change x", "explore", id="a1"),
            used("ok"),
            agent_call("change x", "worker", id="a2"),
            used("ok"),
        ]
    )
    explore = SubagentDefinition(
        name="explore", description=EXPLORE.description, read_only=True, model=sub_model
    )
    ext = Subagents([explore, sub_def(sub_model)])
    parent = Agent(
        model=parent_model,
        tools=[read, write],
        extensions=[ext],
        approval_policy=lambda tool, call: (
            deny("no writes here") if tool.name == "write" else allow()
        ),
    )
    await parent.run("go")
    # read-only: the write tool is not offered, and a call to it is refused unrun
    assert [d.name for d in sub_model.requests[0].tools] == ["read"]
    refused = sub_model.requests[1].messages[-1].tool_result
    assert refused is not None
    assert refused.is_error
    assert "does not exist" in refused.text
    await parent.run("again")
    # the parent's approval policy holds inside the subagent
    denied = sub_model.requests[3].messages[-1].tool_result
    assert denied is not None
    assert denied.text == "no writes here"
    assert WRITES == []


async def test_allow_and_deny_lists_pick_the_tools() -> None:
    sub_model = ScriptedModel([used("a"), used("b")])
    parent_model = ScriptedModel(
        [
            agent_call("x", "only-read", id="a1"),
            used("ok"),
            agent_call("x", "no-read", id="a2"),
            used("ok"),
        ]
    )
    ext = Subagents(
        [
            sub_def(sub_model, name="only-read", tools=("re*",)),
            sub_def(sub_model, name="no-read", disallowed_tools=("read",)),
        ],
        builtins=False,
    )
    parent = Agent(model=parent_model, tools=[read, write], extensions=[ext])
    await parent.run("one")
    await parent.run("two")
    assert [d.name for d in sub_model.requests[0].tools] == ["read"]
    assert [d.name for d in sub_model.requests[1].tools] == ["write"]


async def test_a_background_subagent_is_delivered_in_a_later_turn_with_its_usage() -> None:
    sub_model = ScriptedModel([Step(response=used("the long answer"), delay=0.05)])
    parent_model = ScriptedModel(
        [agent_call("research", "worker", id="b1", background=True), used("started it")]
    )
    store = MemorySessionStore()
    ext = Subagents([sub_def(sub_model)])
    parent = Agent(model=parent_model, extensions=[ext], session=store.session("p"))
    first = await parent.run("research this")
    started = first.tool_call_results()[0].result
    assert started is not None
    assert "task_b1" in started.text
    assert first.usage.requests == 2  # the background run is not charged to this turn
    (handle,) = first.background_tasks
    assert isinstance(handle, BackgroundTaskHandle)
    (late,) = await await_background_tasks([handle], wait_at_most=2.0)
    assert late.result.text == "the long answer"
    assert late.usage.requests == 1
    parent_model.add(used("here is what it found"))
    second = await parent.run(background_results=[late])
    assert second.turn.origin.kind == "background"
    assert second.usage.requests == 2  # its own call plus the subagent's
    note = find_reminder(second.turn.messages, "background-tasks")
    assert note is not None
    assert "the long answer" in note.content


async def test_task_stop_ends_a_background_subagent_with_its_reason() -> None:
    sub_model = ScriptedModel([Step(response=used("never"), delay=30)])
    parent_model = ScriptedModel(
        [
            agent_call("slow work", "worker", id="s1", background=True),
            tool_use(call("TaskStop", {"task_id": "task_s1"}, id="t1")),
            used("stopped it"),
        ]
    )
    ext = Subagents([sub_def(sub_model)])
    parent = Agent(model=parent_model, extensions=[ext])
    result = await parent.run("go")
    stop = result.tool_call_results()[1].result
    assert stop is not None
    assert "Stopping task task_s1" in stop.text
    (late,) = await await_background_tasks(list(result.background_tasks), wait_at_most=2.0)
    assert late.result.is_error
    assert "stopped before finishing: canceled" in late.result.text
    assert "stopped with TaskStop" in late.result.text
    assert ext.tasks.running() == {}


@tool
async def ask(question: str) -> Suspend:
    """Ask the user."""
    return Suspend(question, metadata={"q": question})


async def test_a_subagent_suspension_is_the_parents_and_its_answer_comes_back_in_context() -> None:
    sub_model = ScriptedModel(
        [
            tool_use(call("ask", {"question": "Which colour?"}, id="q1"), usage=USED),
            used("never reached"),
        ]
    )
    parent_model = ScriptedModel([agent_call("paint it", "worker"), used("painted blue")])
    store = MemorySessionStore()
    ext = Subagents([sub_def(sub_model)])
    parent = Agent(model=parent_model, tools=[ask], extensions=[ext], session=store.session("p"))
    first = await parent.run("paint the door")
    assert first.status == "suspended"
    suspension = first.turn.suspension
    assert suspension is not None
    (pending,) = suspension.pending_tool_calls
    assert pending.id == "a1"
    assert pending.prompt == "The worker subagent asks: Which colour?"
    assert pending.metadata["type"] == "subagent"
    assert pending.metadata["question"] == "Which colour?"
    assert first.usage.requests == 2  # the parent call and the subagent call that asked
    # resumed in "another process": a new extension, the question read from the session
    again = Agent(
        model=parent_model,
        tools=[ask],
        extensions=[Subagents([sub_def(sub_model)])],
        session=store.session("p"),
    )
    resumed = await again.run(tool_results={"a1": "blue"})
    assert resumed.status == "completed"
    result = parent_model.requests[-1].messages[-1].tool_result
    assert result is not None
    assert 'stopped to ask: "Which colour?". The answer given: blue' in result.text


async def test_a_background_subagent_that_asks_ends_single_use() -> None:
    sub_model = ScriptedModel([tool_use(call("ask", {"question": "Who?"}, id="q1"))])
    parent_model = ScriptedModel([agent_call("x", "worker", background=True), used("ok")])
    parent = Agent(model=parent_model, tools=[ask], extensions=[Subagents([sub_def(sub_model)])])
    result = await parent.run("go")
    (late,) = await await_background_tasks(list(result.background_tasks), wait_at_most=2.0)
    assert late.result.text == SINGLE_USE_TEXT.format(prompt="Who?")


async def test_subagent_turns_link_to_the_parent_in_records_and_traces() -> None:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    sub_model = ScriptedModel([used("done")])
    parent_model = ScriptedModel([agent_call("x", "worker", id="k1"), used("ok")])
    store = MemorySessionStore()
    parent = Agent(
        model=parent_model,
        name="boss",
        extensions=[Subagents([sub_def(sub_model)], store=store)],
        tracer=OTelTracer(tracer_provider=provider),
    )
    result = await parent.run("go")
    (sub_turn,) = await store.session(f"{result.turn.id}.k1").turns()
    assert sub_turn.origin.parent_turn_id == result.turn.id
    assert sub_turn.origin.parent_tool_call_id == "k1"
    assert result.turn.origin.parent_turn_id is None
    assert decode(Turn, dumps(sub_turn)).origin == sub_turn.origin  # the link round-trips
    runs = {s.name: s for s in spans.get_finished_spans() if s.name.startswith("invoke_agent")}
    sub_span = runs["invoke_agent worker"]
    assert sub_span.attributes is not None
    assert sub_span.attributes["dive.parent_turn.id"] == result.turn.id
    assert sub_span.attributes["dive.parent_tool_call.id"] == "k1"
    boss = runs["invoke_agent boss"]
    assert sub_span.parent is not None
    assert boss.context is not None
    assert sub_span.parent.span_id == boss.context.span_id  # nested under the parent's run


async def test_an_unknown_subagent_type_is_an_error_result() -> None:
    parent_model = ScriptedModel([agent_call("x", "nope"), used("ok")])
    parent = Agent(model=parent_model, extensions=[Subagents()])
    result = await parent.run("go")
    answer = result.tool_call_results()[0].result
    assert answer is not None
    assert answer.is_error
    assert "explore, general-purpose, plan" in answer.text


def test_definitions_load_from_markdown_files(tmp_path: Path) -> None:
    (tmp_path / "reviewer.md").write_text(
        "---\ndescription: Reviews diffs.\ntools: Read, Grep, Bash(git diff:*)\n"
        "disallowed-tools: [Write]\nmodel: inherit\nread-only: true\ntimeout: 120\n"
        "max-model-calls: 7\n---\nYou review code.\n"
    )
    (tmp_path / "notes.txt").write_text("ignored")
    found = load_subagents([tmp_path])
    d = found["reviewer"]
    assert d.description == "Reviews diffs."
    assert d.tools == ("Read", "Grep", "Bash(git diff:*)")
    assert d.disallowed_tools == ("Write",)
    assert d.model is None
    assert d.read_only
    assert d.prompt == "You review code."
    limits = d.run_limits()
    assert limits.max_model_calls_per_turn == 7
    assert limits.response_timeout == 120
    assert d.source == str(tmp_path / "reviewer.md")
    ext = Subagents(paths=[tmp_path])
    assert set(ext.definitions) == {"general-purpose", "explore", "plan", "reviewer"}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("---\nname: x\n---\nbody", "needs a description"),
        ("---\ndescription: d\ncolour: red\n---\n", "unknown field"),
        ("---\ndescription: [unclosed\n---\n", "not valid YAML"),
        ("---\ndescription: d\n", "never closed"),
        ("---\n- a\n- b\n---\n", "YAML mapping"),
    ],
)
def test_bad_definitions_say_what_is_wrong(text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        SubagentDefinition.from_markdown(text, source="x.md", name="x")


def test_a_missing_definition_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no subagent definitions"):
        load_subagents([tmp_path / "missing"])
