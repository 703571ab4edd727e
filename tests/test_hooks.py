"""Hooks: what each hook point may change and what its exceptions do (turns.md §16,
``dive.agent._hooks``), plus extensions and hook reminders (features.md §2, §3)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from dive.agent import (
    Agent,
    AgentEvent,
    Extension,
    HookContext,
    Hooks,
    Limits,
    RunResult,
    SessionStartResult,
    StopDecision,
    ToolCallEvent,
    ToolCallResultEvent,
)
from dive.agent._agent import REMINDER_RULE
from dive.errors import HookAbort
from dive.llm import ModelResponse, ModelSettings, ToolChoice
from dive.messages import Message, TextBlock, ToolResult, validate_complete_turns
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Tool, ToolReturn, tool
from dive.turns import (
    NOT_RUN_TEXT,
    Reminder,
    TurnOutcome,
    find_latest_reminder,
    find_latest_turn_outcome,
    find_reminder,
)

# --- helpers ----------------------------------------------------------------------------------


class Ledger:
    """Records what ran, in order."""

    def __init__(self) -> None:
        self.entries: list[str] = []

    def __call__(self, entry: str) -> None:
        self.entries.append(entry)


def make_tools(ledger: Ledger) -> list[Any]:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ledger(f"add({a},{b})")
        return a + b

    def fail(reason: str = "kaput") -> str:
        """Always raises."""
        ledger("fail")
        raise RuntimeError(reason)

    def soft_fail() -> ToolReturn:
        """Returns an error result."""
        ledger("soft_fail")
        return ToolReturn(content="soft failure", is_error=True)

    return [add, fail, soft_fail]


def results_of(messages: Sequence[Message]) -> list[ToolResult]:
    return [m.tool_result for m in messages if m.tool_result is not None]


def result_text(r: ToolResult) -> str:
    return "".join(b.text for b in r.content if isinstance(b, TextBlock))


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


def outcome_of(result: RunResult[Any]) -> TurnOutcome:
    assert result.status == "incomplete"
    assert result.outcome is not None
    return result.outcome


def add_script(*more: ModelResponse | str | Step) -> ScriptedModel:
    return ScriptedModel([tool_use(call("add", {"a": 1, "b": 2})), *more])


def logged_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


# --- session_start ----------------------------------------------------------------------------


async def test_session_start_messages_go_ahead_of_input() -> None:
    seen: list[str | None] = []

    def start(ctx: HookContext) -> SessionStartResult:
        seen.append(ctx.session_start_source)
        ctx.values["seeded"] = True
        return SessionStartResult(
            messages=(Message.user("seed context"), Message.assistant("noted"))
        )

    def pre_gen(ctx: HookContext) -> None:
        seen.append(f"pre_generation seeded={ctx.values.get('seeded')}")

    model = ScriptedModel([text("ok")])
    agent = Agent(model=model, hooks=Hooks(session_start=[start], pre_generation=[pre_gen]))
    result = await agent.run("the input")
    assert result.status == "completed"
    assert seen == ["new", "pre_generation seeded=True"]
    assert texts(model.requests[0].messages) == ["seed context", "noted", "the input"]


async def test_session_start_async_hook() -> None:
    async def start(ctx: HookContext) -> SessionStartResult:
        return SessionStartResult(messages=(Message.user("seed"),))

    model = ScriptedModel([text("ok")])
    await Agent(model=model, hooks=Hooks(session_start=[start])).run("in")
    assert texts(model.requests[0].messages) == ["seed", "in"]


async def test_session_start_not_fired_with_history() -> None:
    calls: list[str] = []

    def start(ctx: HookContext) -> None:
        calls.append("start")

    model = ScriptedModel([text("ok"), text("ok")])
    agent = Agent(model=model, hooks=Hooks(session_start=[start]))
    await agent.run("first", history=[Message.user("before"), Message.assistant("yes")])
    assert calls == []
    await agent.run("second")
    assert calls == ["start"]


async def test_session_start_exception_raised_from_run() -> None:
    events: list[AgentEvent] = []
    ended: list[str] = []

    def start(ctx: HookContext) -> None:
        raise RuntimeError("no session for you")

    def end_hook(ctx: HookContext) -> None:
        ended.append(ctx.hook_point)

    model = ScriptedModel([text("ok")])
    agent = Agent(
        model=model,
        hooks=Hooks(
            session_start=[start], post_generation=[end_hook], on_incomplete_turn=[end_hook]
        ),
    )
    with pytest.raises(RuntimeError, match="no session for you"):
        await agent.run("hi", on_event=events.append)
    assert model.requests == []
    assert events == []  # the turn never began: no turn_ended
    assert ended == []


# --- pre_generation ---------------------------------------------------------------------------


async def test_pre_generation_changes_system_prompt_and_working_set() -> None:
    seen: list[list[str]] = []

    def pre_gen(ctx: HookContext) -> None:
        seen.append(texts(ctx.messages))
        ctx.system_prompt = "REPLACED SYSTEM"
        ctx.messages = [Message.user("compacted history"), *ctx.messages[-1:]]

    model = ScriptedModel([text("ok")])
    agent = Agent(model=model, instructions="original", hooks=Hooks(pre_generation=[pre_gen]))
    result = await agent.run("the input", history=[Message.user("old"), Message.assistant("a")])
    assert seen == [["old", "a", "the input"]]
    assert model.requests[0].system == "REPLACED SYSTEM"
    assert texts(model.requests[0].messages) == ["compacted history", "the input"]
    # the saved turn keeps the input, never the compacted working set
    assert texts(result.turn.messages) == ["the input", "ok"]


async def test_pre_generation_fires_once() -> None:
    count: list[int] = []

    def pre_gen(ctx: HookContext) -> None:
        count.append(1)

    model = add_script(text("3"))
    await Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_generation=[pre_gen])).run(
        "hi"
    )
    assert len(count) == 1


async def test_pre_generation_exception_is_incomplete_error() -> None:
    def pre_gen(ctx: HookContext) -> None:
        raise ValueError("bad prep")

    model = ScriptedModel([text("never")])
    result = await Agent(model=model, hooks=Hooks(pre_generation=[pre_gen])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "error"
    assert outcome.next == "input"
    assert isinstance(result.error, ValueError)
    assert outcome.error == "bad prep"
    assert outcome.hook is None
    assert model.requests == []
    # input and outcome saved
    assert result.turn.messages[0].text == "hi"
    assert find_latest_turn_outcome(result.turn.messages) == outcome


async def test_pre_generation_hook_abort() -> None:
    def pre_gen(ctx: HookContext) -> None:
        raise HookAbort("policy says no")

    model = ScriptedModel([text("never")])
    result = await Agent(model=model, hooks=Hooks(pre_generation=[pre_gen])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "hook_abort"
    assert outcome.hook == "pre_generation"
    assert outcome.error == "policy says no"
    assert outcome.next == "input"
    assert isinstance(result.error, HookAbort)
    assert model.requests == []


# --- pre_iteration ----------------------------------------------------------------------------


async def test_pre_iteration_fires_before_every_model_call() -> None:
    iterations: list[int] = []

    def pre_iter(ctx: HookContext) -> None:
        iterations.append(ctx.iteration)

    model = ScriptedModel(
        [tool_use(call("add", {"a": 1, "b": 2})), tool_use(call("add", {"a": 3, "b": 4})), "7"]
    )
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_iteration=[pre_iter]))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert iterations == [0, 1, 2]
    assert len(model.requests) == 3


async def test_pre_iteration_messages_are_model_facing_only() -> None:
    def pre_iter(ctx: HookContext) -> None:
        if ctx.iteration == 1:
            ctx.messages = [Message.user("summary of earlier work")]

    model = add_script(text("3"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_iteration=[pre_iter]))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert texts(model.requests[1].messages) == ["summary of earlier work"]
    # the record keeps full fidelity
    assert [m.role for m in result.turn.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.turn.messages[0].text == "hi"
    validate_complete_turns(result.turn.messages)


async def test_pre_iteration_in_place_edit_reaches_model() -> None:
    def pre_iter(ctx: HookContext) -> None:
        ctx.messages[0] = Message.user("rewritten in place")

    model = ScriptedModel([text("ok")])
    await Agent(model=model, hooks=Hooks(pre_iteration=[pre_iter])).run("original")
    assert texts(model.requests[0].messages) == ["rewritten in place"]


async def test_pre_iteration_system_prompt() -> None:
    def pre_iter(ctx: HookContext) -> None:
        ctx.system_prompt = f"iteration {ctx.iteration}"

    model = add_script(text("3"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_iteration=[pre_iter]))
    await agent.run("hi")
    assert [r.system for r in model.requests] == ["iteration 0", "iteration 1"]


async def test_pre_iteration_model_settings_per_call() -> None:
    def pre_iter(ctx: HookContext) -> None:
        assert ctx.model_settings is not None
        if ctx.iteration == 0:
            ctx.model_settings = ctx.model_settings.merge(
                ModelSettings(tool_choice=ToolChoice(type="tool", name="add"))
            )

    model = add_script(text("3"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_iteration=[pre_iter]))
    result = await agent.run("hi")
    assert result.status == "completed"
    first, second = model.requests
    assert first.tool_choice == ToolChoice(type="tool", name="add")
    assert second.tool_choice is None


async def test_pre_iteration_sees_forced_final_answer_settings() -> None:
    seen: list[str | None] = []

    def pre_iter(ctx: HookContext) -> None:
        assert ctx.model_settings is not None
        tc = ctx.model_settings.tool_choice
        seen.append(tc.type if tc is not None else None)

    model = add_script(text("3"))
    agent = Agent(
        model=model,
        tools=make_tools(Ledger()),
        hooks=Hooks(pre_iteration=[pre_iter]),
        limits=Limits(max_model_calls_per_turn=2),
    )
    await agent.run("hi")
    assert seen == [None, "none"]


async def test_pre_iteration_exception_is_incomplete_error() -> None:
    def pre_iter(ctx: HookContext) -> None:
        if ctx.iteration == 1:
            raise RuntimeError("iteration hook broke")

    ledger = Ledger()
    model = add_script(text("never"))
    agent = Agent(model=model, tools=make_tools(ledger), hooks=Hooks(pre_iteration=[pre_iter]))
    result = await agent.run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "error"
    assert outcome.error == "iteration hook broke"
    assert isinstance(result.error, RuntimeError)
    assert len(model.requests) == 1
    assert ledger.entries == ["add(1,2)"]
    validate_complete_turns(result.turn.messages)


async def test_pre_iteration_hook_abort() -> None:
    def pre_iter(ctx: HookContext) -> None:
        raise HookAbort("stop now")

    model = ScriptedModel([text("never")])
    result = await Agent(model=model, hooks=Hooks(pre_iteration=[pre_iter])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "hook_abort"
    assert outcome.hook == "pre_iteration"
    assert model.requests == []


# --- pre_tool_use -----------------------------------------------------------------------------


async def test_pre_tool_use_updated_input_replaces_arguments() -> None:
    ledger = Ledger()
    seen: list[dict[str, Any]] = []

    def pre(ctx: HookContext) -> None:
        assert ctx.call is not None
        assert ctx.tool is not None
        seen.append({"tool": ctx.tool.name, **ctx.call.arguments})
        ctx.updated_input = {"a": 10, "b": 20}

    model = add_script(text("30"))
    agent = Agent(model=model, tools=make_tools(ledger), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    assert seen == [{"tool": "add", "a": 1, "b": 2}]
    assert ledger.entries == ["add(10,20)"]
    assert [result_text(r) for r in results_of(result.turn.messages)] == ["30"]


async def test_pre_tool_use_updated_input_last_writer_wins() -> None:
    ledger = Ledger()

    def first(ctx: HookContext) -> None:
        ctx.updated_input = {"a": 10, "b": 20}

    def second(ctx: HookContext) -> None:
        assert ctx.updated_input == {"a": 10, "b": 20}
        ctx.updated_input = {"a": 5, "b": 5}

    model = add_script(text("10"))
    hooks = Hooks(pre_tool_use=[first, second])
    await Agent(model=model, tools=make_tools(ledger), hooks=hooks).run("hi")
    assert ledger.entries == ["add(5,5)"]


async def test_pre_tool_use_invalid_updated_input_answers_is_error() -> None:
    ledger = Ledger()

    def pre(ctx: HookContext) -> None:
        ctx.updated_input = {"a": "not a number"}

    model = add_script(text("ok"))
    agent = Agent(model=model, tools=make_tools(ledger), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert ledger.entries == []
    (r,) = results_of(result.turn.messages)
    assert r.is_error
    assert "add" in result_text(r)
    assert "a" in result_text(r)
    assert "b" in result_text(r)  # the missing argument is named too
    validate_complete_turns(result.turn.messages)


async def test_pre_tool_use_additional_context_after_results() -> None:
    def pre(ctx: HookContext) -> None:
        assert ctx.call is not None
        ctx.additional_context = f"context for {ctx.call.arguments['a']}"

    model = ScriptedModel(
        [tool_use(call("add", {"a": 1, "b": 2}), call("add", {"a": 7, "b": 1})), text("ok")]
    )
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    msgs = result.turn.messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "tool", "user", "assistant"]
    assert msgs[4].text == "context for 1\ncontext for 7"
    assert texts(model.requests[1].messages)[-1] == "context for 1\ncontext for 7"
    events = [e for e in result.items if isinstance(e, ToolCallResultEvent)]
    assert [e.additional_context for e in events] == ["context for 1", "context for 7"]
    validate_complete_turns(msgs)


async def test_pre_tool_use_exception_denies_call_and_later_hooks_run() -> None:
    ledger = Ledger()
    later: list[str] = []

    def deny(ctx: HookContext) -> None:
        raise PermissionError("add is not allowed today")

    def deny_too(ctx: HookContext) -> None:
        later.append("second ran")
        raise ValueError("second denial is not the one used")

    def third(ctx: HookContext) -> None:
        later.append("third ran")

    model = add_script(text("ok"))
    hooks = Hooks(pre_tool_use=[deny, deny_too, third])
    collected: list[AgentEvent] = []
    result = await Agent(model=model, tools=make_tools(ledger), hooks=hooks).run(
        "hi", on_event=collected.append
    )
    assert result.status == "completed"
    assert ledger.entries == []
    assert later == ["second ran", "third ran"]
    (r,) = results_of(result.turn.messages)
    assert r.is_error
    assert result_text(r) == "add is not allowed today"
    kinds = [e.type for e in collected if e.type in ("tool_call", "tool_call_result")]
    assert kinds == ["tool_call", "tool_call_result"]


async def test_pre_tool_use_not_called_for_unknown_or_invalid_calls() -> None:
    seen: list[str] = []

    def pre(ctx: HookContext) -> None:
        assert ctx.call is not None
        seen.append(ctx.call.id)

    model = ScriptedModel(
        [
            tool_use(
                call("nope", {}, id="unknown"),
                call("add", {"a": "x"}, id="invalid"),
                call("add", {"a": 1, "b": 1}, id="good"),
            ),
            text("ok"),
        ]
    )
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    assert seen == ["good"]
    assert [r.is_error for r in results_of(result.turn.messages)] == [True, True, False]


async def test_pre_tool_use_hook_abort_answers_unlaunched_calls_not_run() -> None:
    ledger = Ledger()
    seen: list[str] = []

    def pre(ctx: HookContext) -> None:
        assert ctx.call is not None
        seen.append(ctx.call.id)
        if ctx.call.id == "second":
            raise HookAbort("too risky")

    model = ScriptedModel(
        [
            tool_use(
                call("add", {"a": 1, "b": 1}, id="first"),
                call("add", {"a": 2, "b": 2}, id="second"),
                call("add", {"a": 3, "b": 3}, id="third"),
            ),
            text("never"),
        ]
    )
    agent = Agent(
        model=model,
        tools=make_tools(ledger),
        hooks=Hooks(pre_tool_use=[pre]),
        parallel_tool_execution=False,
    )
    result = await agent.run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "hook_abort"
    assert outcome.error == "too risky"
    assert outcome.next == "input"
    assert isinstance(result.error, HookAbort)
    assert seen == ["first", "second"]
    assert ledger.entries == ["add(1,1)"]
    assert len(model.requests) == 1
    rs = {r.tool_call_id: r for r in results_of(result.turn.messages)}
    assert result_text(rs["first"]) == "2"
    assert not rs["first"].is_error
    assert result_text(rs["second"]) == NOT_RUN_TEXT
    assert result_text(rs["third"]) == NOT_RUN_TEXT
    assert rs["second"].is_error
    assert rs["third"].is_error
    states = {c.id: c.state for c in outcome.tool_calls}
    assert states == {"first": "completed", "second": "not_started", "third": "not_started"}
    validate_complete_turns(result.turn.messages)
    assert find_latest_turn_outcome(result.turn.messages) == outcome


async def test_pre_tool_use_hook_abort_names_hook() -> None:
    def pre(ctx: HookContext) -> None:
        raise HookAbort("no")

    model = add_script()
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    assert outcome_of(result).hook == "pre_tool_use"


async def test_pre_tool_use_hook_abort_every_tool_call_gets_result_event() -> None:
    def pre(ctx: HookContext) -> None:
        assert ctx.call is not None
        if ctx.call.id == "second":
            raise HookAbort("no")

    model = ScriptedModel(
        [
            tool_use(
                call("add", {"a": 1, "b": 1}, id="first"),
                call("add", {"a": 2, "b": 2}, id="second"),
                call("add", {"a": 3, "b": 3}, id="third"),
            )
        ]
    )
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    handled: list[AgentEvent] = []
    result = await agent.run("hi", on_event=handled.append)
    announced = [e.call.id for e in result.items if isinstance(e, ToolCallEvent)]
    answered = {e.call.id: e for e in result.items if isinstance(e, ToolCallResultEvent)}
    assert announced == ["first", "second"]
    assert sorted(answered) == announced
    owed = answered["second"]
    assert owed.state == "not_started"
    assert owed.result is not None
    assert result_text(owed.result) == NOT_RUN_TEXT
    assert handled[-1].type == "turn_ended"
    handled_results = [e.call.id for e in handled if isinstance(e, ToolCallResultEvent)]
    assert handled_results == ["first", "second"]


# --- post_tool_use ----------------------------------------------------------------------------


async def test_post_tool_use_replaces_result() -> None:
    seen: list[str] = []

    def post(ctx: HookContext) -> None:
        assert ctx.tool_result is not None
        assert ctx.call is not None
        seen.append(result_text(ctx.tool_result))
        ctx.tool_result = ToolResult(
            tool_call_id=ctx.call.id, name=ctx.call.name, content=(TextBlock(text="redacted"),)
        )

    model = add_script(text("ok"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use=[post]))
    result = await agent.run("hi")
    assert seen == ["3"]
    assert [result_text(r) for r in results_of(result.turn.messages)] == ["redacted"]
    ev = result.tool_call_results()[0]
    assert ev.result is not None
    assert result_text(ev.result) == "redacted"
    assert [result_text(r) for r in results_of(model.requests[1].messages)] == ["redacted"]


async def test_post_tool_use_none_restores_result() -> None:
    def post(ctx: HookContext) -> None:
        ctx.tool_result = None

    model = add_script(text("ok"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use=[post]))
    result = await agent.run("hi")
    assert [result_text(r) for r in results_of(result.turn.messages)] == ["3"]


async def test_post_tool_use_additional_context_joins_pre_hooks() -> None:
    def pre(ctx: HookContext) -> None:
        ctx.additional_context = "from pre"

    def post(ctx: HookContext) -> None:
        ctx.additional_context = "from post"

    model = add_script(text("ok"))
    hooks = Hooks(pre_tool_use=[pre], post_tool_use=[post])
    result = await Agent(model=model, tools=make_tools(Ledger()), hooks=hooks).run("hi")
    msgs = result.turn.messages
    assert msgs[3].role == "user"
    assert msgs[3].text == "from pre\nfrom post"


async def test_post_tool_use_exception_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    later: list[str] = []

    def boom(ctx: HookContext) -> None:
        raise RuntimeError("post hook broke")

    def after(ctx: HookContext) -> None:
        later.append("ran")

    model = add_script(text("ok"))
    hooks = Hooks(post_tool_use=[boom, after])
    with caplog.at_level(logging.ERROR):
        result = await Agent(model=model, tools=make_tools(Ledger()), hooks=hooks).run("hi")
    assert result.status == "completed"
    assert later == ["ran"]
    assert [result_text(r) for r in results_of(result.turn.messages)] == ["3"]
    assert any("post_tool_use" in m for m in logged_errors(caplog))


async def test_post_tool_use_not_called_for_failures() -> None:
    post: list[str] = []
    failure: list[str] = []

    def on_post(ctx: HookContext) -> None:
        assert ctx.call is not None
        post.append(ctx.call.name)

    def on_failure(ctx: HookContext) -> None:
        assert ctx.call is not None
        failure.append(ctx.call.name)

    model = ScriptedModel(
        [tool_use(call("add", {"a": 1, "b": 1}), call("fail", {}), call("soft_fail", {})), "ok"]
    )
    hooks = Hooks(post_tool_use=[on_post], post_tool_use_failure=[on_failure])
    result = await Agent(model=model, tools=make_tools(Ledger()), hooks=hooks).run("hi")
    assert result.status == "completed"
    assert post == ["add"]
    assert failure == ["fail", "soft_fail"]


async def test_post_tool_use_hook_abort_names_hook() -> None:
    def post(ctx: HookContext) -> None:
        raise HookAbort("enough")

    model = add_script(text("never"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use=[post]))
    result = await agent.run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "hook_abort"
    assert outcome.hook == "post_tool_use"


async def test_post_tool_use_hook_abort_keeps_known_result() -> None:
    def post(ctx: HookContext) -> None:
        raise HookAbort("enough")

    model = add_script(text("never"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use=[post]))
    result = await agent.run("hi")
    outcome = outcome_of(result)
    assert [c.state for c in outcome.tool_calls] == ["completed"]
    assert outcome.next == "input"
    assert [result_text(r) for r in results_of(result.turn.messages)] == ["3"]


# --- post_tool_use_failure --------------------------------------------------------------------


async def test_post_tool_use_failure_on_exception() -> None:
    seen: list[tuple[str, bool]] = []

    def on_failure(ctx: HookContext) -> None:
        assert ctx.tool_result is not None
        seen.append((result_text(ctx.tool_result), ctx.tool_result.is_error))

    model = ScriptedModel([tool_use(call("fail", {"reason": "disk full"})), text("ok")])
    agent = Agent(
        model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use_failure=[on_failure])
    )
    result = await agent.run("hi")
    assert result.status == "completed"
    assert seen == [("Tool execution error: disk full", True)]


async def test_post_tool_use_failure_on_is_error_result_can_replace() -> None:
    def on_failure(ctx: HookContext) -> None:
        assert ctx.tool_result is not None
        assert ctx.call is not None
        assert result_text(ctx.tool_result) == "soft failure"
        ctx.tool_result = ToolResult(
            tool_call_id=ctx.call.id,
            name=ctx.call.name,
            content=(TextBlock(text="explained failure"),),
            is_error=True,
        )

    model = ScriptedModel([tool_use(call("soft_fail", {})), text("ok")])
    agent = Agent(
        model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use_failure=[on_failure])
    )
    result = await agent.run("hi")
    (r,) = results_of(result.turn.messages)
    assert r.is_error
    assert result_text(r) == "explained failure"


async def test_post_tool_use_failure_exception_logged(caplog: pytest.LogCaptureFixture) -> None:
    def on_failure(ctx: HookContext) -> None:
        raise RuntimeError("failure hook broke")

    model = ScriptedModel([tool_use(call("fail", {})), text("ok")])
    agent = Agent(
        model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use_failure=[on_failure])
    )
    with caplog.at_level(logging.ERROR):
        result = await agent.run("hi")
    assert result.status == "completed"
    (r,) = results_of(result.turn.messages)
    assert result_text(r) == "Tool execution error: kaput"
    assert any("post_tool_use_failure" in m for m in logged_errors(caplog))


async def test_post_tool_use_failure_on_invalid_input() -> None:
    seen: list[str] = []

    def on_failure(ctx: HookContext) -> None:
        assert ctx.call is not None
        seen.append(ctx.call.id)

    model = ScriptedModel([tool_use(call("add", {"a": "x"}, id="bad")), text("ok")])
    agent = Agent(
        model=model, tools=make_tools(Ledger()), hooks=Hooks(post_tool_use_failure=[on_failure])
    )
    await agent.run("hi")
    assert seen == ["bad"]


# --- stop -------------------------------------------------------------------------------------


async def test_stop_fires_on_final_answer() -> None:
    seen: list[tuple[bool, str]] = []

    def stop(ctx: HookContext) -> None:
        seen.append((ctx.stop_hook_active, ctx.output_messages[-1].text))

    model = add_script(text("3"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(stop=[stop]))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert seen == [(False, "3")]


async def test_stop_continue_reenters_loop_with_recorded_reminder() -> None:
    seen: list[bool] = []

    def stop(ctx: HookContext) -> StopDecision | None:
        seen.append(ctx.stop_hook_active)
        if not ctx.stop_hook_active:
            return StopDecision(continue_=True, reason="also check the tests")
        return None

    model = ScriptedModel([text("first answer"), text("second answer")])
    result = await Agent(model=model, hooks=Hooks(stop=[stop])).run("hi")
    assert result.status == "completed"
    assert seen == [False, True]
    assert len(model.requests) == 2
    assert result.output_text.endswith("second answer")
    expected = "The following input arrived from the user: also check the tests"
    rem = find_latest_reminder(result.turn.messages, "stop-continuation")
    assert rem is not None
    assert rem.content == expected
    assert rem.tier == "contextual"
    second = model.requests[1].messages
    assert find_latest_reminder(second, "stop-continuation") == rem
    assert [m.role for m in result.turn.messages] == ["user", "assistant", "user", "assistant"]
    assert result.turn.model_calls == 2


async def test_stop_first_continue_wins() -> None:
    ran: list[str] = []

    def a(ctx: HookContext) -> StopDecision | None:
        ran.append("a")
        return None if ctx.stop_hook_active else StopDecision(continue_=True, reason="from a")

    def b(ctx: HookContext) -> StopDecision | None:
        ran.append("b")
        return None if ctx.stop_hook_active else StopDecision(continue_=True, reason="from b")

    def c(ctx: HookContext) -> StopDecision:
        ran.append("c")
        return StopDecision(continue_=False, reason="ignored")

    model = ScriptedModel([text("one"), text("two")])
    result = await Agent(model=model, hooks=Hooks(stop=[a, b, c])).run("hi")
    assert ran == ["a", "b", "c", "a", "b", "c"]
    rem = find_reminder(result.turn.messages, "stop-continuation")
    assert rem is not None
    assert rem.content.endswith("from a")
    assert sum("stop-continuation" in m.text for m in result.turn.messages) == 1


async def test_stop_continuation_grants_fresh_budget() -> None:
    def stop(ctx: HookContext) -> StopDecision | None:
        return None if ctx.stop_hook_active else StopDecision(continue_=True, reason="more")

    model = ScriptedModel([text("one"), text("two")])
    agent = Agent(model=model, hooks=Hooks(stop=[stop]), limits=Limits(max_model_calls_per_turn=1))
    result = await agent.run("hi")
    assert result.status == "completed"
    assert result.turn.model_calls == 2


async def test_stop_reappends_model_only_reminders_at_tail() -> None:
    def stop(ctx: HookContext) -> StopDecision | None:
        return None if ctx.stop_hook_active else StopDecision(continue_=True, reason="more")

    reminder = Reminder(name="clock", content="noon")
    model = ScriptedModel([text("one"), text("two")])
    result = await Agent(model=model, hooks=Hooks(stop=[stop])).run("hi", reminders=[reminder])
    assert result.status == "completed"
    second = model.requests[1].messages
    assert find_latest_reminder(second[-1:], "clock") == reminder
    assert find_latest_reminder(result.turn.messages, "clock") is None


async def test_stop_exception_logged(caplog: pytest.LogCaptureFixture) -> None:
    def stop(ctx: HookContext) -> None:
        raise RuntimeError("stop hook broke")

    model = ScriptedModel([text("done")])
    with caplog.at_level(logging.ERROR):
        result = await Agent(model=model, hooks=Hooks(stop=[stop])).run("hi")
    assert result.status == "completed"
    assert result.output_text == "done"
    assert any("stop hook" in m for m in logged_errors(caplog))


async def test_stop_hook_abort() -> None:
    def stop(ctx: HookContext) -> None:
        raise HookAbort("not acceptable")

    model = ScriptedModel([text("done")])
    result = await Agent(model=model, hooks=Hooks(stop=[stop])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "hook_abort"
    assert outcome.hook == "stop"


@pytest.mark.parametrize(
    "script",
    [
        [Step(raise_before=RuntimeError("boom"))],
        [text("cut short", stop_reason="max_tokens")],
        [tool_use(call("add", {"a": 1, "b": 2}), stop_reason="mystery")],
    ],
    ids=["provider_error", "output_limit", "provider_stopped"],
)
async def test_stop_never_fires_on_incomplete_turn(script: list[ModelResponse | Step]) -> None:
    fired: list[str] = []

    def stop(ctx: HookContext) -> None:
        fired.append("stop")

    model = ScriptedModel(script)
    result = await Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(stop=[stop])).run(
        "hi"
    )
    assert result.status == "incomplete"
    assert fired == []


# --- post_generation --------------------------------------------------------------------------


async def test_post_generation_observes_completed_turn() -> None:
    seen: list[tuple[Any, list[Message], Any]] = []

    async def post_gen(ctx: HookContext) -> None:
        seen.append((ctx.result, list(ctx.output_messages), ctx.usage))

    model = add_script(text("3"))
    result = await Agent(
        model=model, tools=make_tools(Ledger()), hooks=Hooks(post_generation=[post_gen])
    ).run("hi")
    assert len(seen) == 1
    observed, messages, usage = seen[0]
    assert isinstance(observed, RunResult)
    assert observed.status == "completed"
    assert observed.output_text == "3"
    assert tuple(messages) == result.turn.messages
    assert usage == result.usage


async def test_post_generation_exception_logged(caplog: pytest.LogCaptureFixture) -> None:
    def post_gen(ctx: HookContext) -> None:
        raise RuntimeError("post_generation broke")

    model = ScriptedModel([text("done")])
    with caplog.at_level(logging.ERROR):
        result = await Agent(model=model, hooks=Hooks(post_generation=[post_gen])).run("hi")
    assert result.status == "completed"
    assert result.error is None
    assert result.output_text == "done"
    assert any("post_generation" in m for m in logged_errors(caplog))


async def test_post_generation_hook_abort_keeps_completed() -> None:
    def post_gen(ctx: HookContext) -> None:
        raise HookAbort("too late to abort")

    model = ScriptedModel([text("done")])
    result = await Agent(model=model, hooks=Hooks(post_generation=[post_gen])).run("hi")
    assert result.status == "completed"
    assert result.output_text == "done"


# --- on_incomplete_turn -----------------------------------------------------------------------


async def test_on_incomplete_turn_sees_closed_turn() -> None:
    seen: list[tuple[Any, list[Message]]] = []

    def on_inc(ctx: HookContext) -> None:
        assert ctx.turn is not None
        assert ctx.turn.outcome is ctx.outcome
        assert ctx.turn.status == "incomplete"
        seen.append((ctx.outcome, list(ctx.output_messages)))

    model = add_script(Step(raise_before=RuntimeError("boom")))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(on_incomplete_turn=[on_inc]))
    result = await agent.run("hi")
    assert len(seen) == 1
    outcome, messages = seen[0]
    assert isinstance(outcome, TurnOutcome)
    assert outcome.reason == "provider_error"
    assert outcome == result.outcome
    validate_complete_turns(messages)
    assert find_latest_turn_outcome(messages[-1:]) == outcome
    assert tuple(messages) == result.turn.messages


async def test_on_incomplete_turn_rewrites_outcome_and_messages() -> None:
    def on_inc(ctx: HookContext) -> None:
        assert ctx.outcome is not None
        ctx.outcome = replace(ctx.outcome, next="input")
        ctx.output_messages = [*ctx.output_messages, Message.user("audit trail")]

    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model, hooks=Hooks(on_incomplete_turn=[on_inc])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "provider_error"
    assert outcome.next == "input"
    assert result.turn.messages[-1].text == "audit trail"
    assert result.output_messages == result.turn.messages


async def test_on_incomplete_turn_exception_logged(caplog: pytest.LogCaptureFixture) -> None:
    later: list[str] = []

    def boom(ctx: HookContext) -> None:
        raise HookAbort("aborts are only logged here")

    def after(ctx: HookContext) -> None:
        later.append("ran")

    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    with caplog.at_level(logging.ERROR):
        result = await Agent(model=model, hooks=Hooks(on_incomplete_turn=[boom, after])).run("hi")
    outcome = outcome_of(result)
    assert outcome.reason == "provider_error"
    assert later == ["ran"]
    assert any("on_incomplete_turn" in m for m in logged_errors(caplog))
    assert find_latest_turn_outcome(result.turn.messages) == outcome


async def test_on_incomplete_turn_recorded_reminders_before_note() -> None:
    def on_inc(ctx: HookContext) -> None:
        ctx.append_reminder(Reminder(name="audit", content="logged"), recorded=True)

    model = ScriptedModel([Step(raise_before=RuntimeError("boom"))])
    result = await Agent(model=model, hooks=Hooks(on_incomplete_turn=[on_inc])).run("hi")
    msgs = result.turn.messages
    assert find_latest_reminder(msgs[-2:-1], "audit") is not None
    assert find_latest_turn_outcome(msgs[-1:]) is not None


async def test_recorded_reminders_queued_before_end_go_before_note() -> None:
    def pre(ctx: HookContext) -> None:
        ctx.append_reminder(Reminder(name="kept", content="saved"), recorded=True)
        ctx.append_reminder(Reminder(name="dropped", content="model only"), recorded=False)

    model = add_script(Step(raise_before=RuntimeError("boom")))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    msgs = result.turn.messages
    # delivered at the boundary after the tool results, before the failed model call
    assert find_latest_reminder(model.requests[1].messages, "kept") is not None
    assert find_latest_reminder(model.requests[1].messages, "dropped") is not None
    assert find_latest_reminder(msgs, "kept") is not None
    assert find_latest_reminder(msgs, "dropped") is None
    assert find_latest_turn_outcome(msgs[-1:]) is not None


# --- exactly one end hook ---------------------------------------------------------------------


def _abort_pre_gen(ctx: HookContext) -> None:
    raise HookAbort("x")


@pytest.mark.parametrize(
    ("script", "extra", "status"),
    [
        ([text("done")], Hooks(), "completed"),
        ([tool_use(call("add", {"a": 1, "b": 2})), text("3")], Hooks(), "completed"),
        ([Step(raise_before=RuntimeError("boom"))], Hooks(), "incomplete"),
        ([text("x")], Hooks(pre_generation=[_abort_pre_gen]), "incomplete"),
        ([text("x", stop_reason="max_tokens")], Hooks(), "incomplete"),
        ([tool_use(call("add", {"a": 1, "b": 2}), stop_reason="refusal")], Hooks(), "completed"),
        ([Step(response=text("partial text"), cut_after=3)], Hooks(), "incomplete"),
    ],
    ids=[
        "text",
        "tools",
        "provider_error",
        "hook_abort",
        "output_limit",
        "refusal",
        "stream_interrupted",
    ],
)
async def test_exactly_one_end_hook(
    script: list[ModelResponse | Step], extra: Hooks, status: str
) -> None:
    fired: list[str] = []

    def end(ctx: HookContext) -> None:
        fired.append(ctx.hook_point)

    hooks = Hooks(post_generation=[end], on_incomplete_turn=[end]).merged(extra)
    model = ScriptedModel(script)
    result = await Agent(model=model, tools=make_tools(Ledger()), hooks=hooks).run("hi")
    assert result.status == status
    expected = "post_generation" if status == "completed" else "on_incomplete_turn"
    assert fired == [expected]


# --- extensions -------------------------------------------------------------------------------


class AuditExtension:
    """An extension: one tool, hooks and a rule."""

    def __init__(self, order: list[str]) -> None:
        self.order = order

    def tools(self) -> Sequence[Tool]:
        @tool
        def audit(note: str) -> str:
            """Record an audit note."""
            self.order.append(f"audit:{note}")
            return "recorded"

        return [audit]

    def hooks(self) -> Hooks | None:
        def pre_gen(ctx: HookContext) -> None:
            self.order.append("ext pre_generation")

        def pre(ctx: HookContext) -> None:
            self.order.append("ext pre_tool_use")

        return Hooks(pre_generation=[pre_gen], pre_tool_use=[pre])

    def rules(self) -> str | None:
        return "Always audit your work."


class EmptyExtension:
    def tools(self) -> Sequence[Tool]:
        return []

    def hooks(self) -> Hooks | None:
        return None

    def rules(self) -> str | None:
        return None


async def test_extension_hooks_run_after_callers_and_rules_join_prompt() -> None:
    order: list[str] = []

    def pre_gen(ctx: HookContext) -> None:
        order.append("caller pre_generation")

    def pre(ctx: HookContext) -> None:
        order.append("caller pre_tool_use")

    ext = AuditExtension(order)
    assert isinstance(ext, Extension)
    model = ScriptedModel([tool_use(call("audit", {"note": "n1"})), text("ok")])
    agent = Agent(
        model=model,
        instructions="Be careful.",
        extensions=[ext, None, EmptyExtension()],
        hooks=Hooks(pre_generation=[pre_gen], pre_tool_use=[pre]),
    )
    result = await agent.run("hi")
    assert result.status == "completed"
    assert order == [
        "caller pre_generation",
        "ext pre_generation",
        "caller pre_tool_use",
        "ext pre_tool_use",
        "audit:n1",
    ]
    assert "audit" in [d.name for d in model.requests[0].tools]
    assert model.requests[0].system == f"Be careful.\n\nAlways audit your work.\n\n{REMINDER_RULE}"
    plain = Agent(model=ScriptedModel([]), instructions="Be careful.", prime_reminders=False)
    assert plain.system_prompt() == "Be careful."
    with_ext = Agent(
        model=ScriptedModel([]),
        instructions="Be careful.",
        extensions=[AuditExtension([])],
        prime_reminders=False,
    )
    assert with_ext.system_prompt() == "Be careful.\n\nAlways audit your work."


# --- reminders from hooks, values, sync/async -------------------------------------------------


async def test_hook_reminders_recorded_vs_model_only() -> None:
    def pre(ctx: HookContext) -> None:
        ctx.append_reminder(Reminder(name="saved-note", content="kept"), recorded=True)
        ctx.append_reminder(Reminder(name="ephemeral", content="model only"), recorded=False)

    model = add_script(text("ok"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=Hooks(pre_tool_use=[pre]))
    result = await agent.run("hi")
    second = model.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool", "user", "user"]
    assert find_latest_reminder(second, "saved-note") == Reminder(name="saved-note", content="kept")
    assert find_latest_reminder(second, "ephemeral") is not None
    msgs = result.turn.messages
    assert find_latest_reminder(msgs, "saved-note") is not None
    assert find_latest_reminder(msgs, "ephemeral") is None
    validate_complete_turns(msgs)


async def test_pre_generation_reminders_reach_first_call() -> None:
    def pre_gen(ctx: HookContext) -> None:
        ctx.append_reminder(Reminder(name="setup", content="saved"), recorded=True)
        ctx.append_reminder(Reminder(name="hint", content="ephemeral"))

    model = ScriptedModel([text("ok")])
    result = await Agent(model=model, hooks=Hooks(pre_generation=[pre_gen])).run("hi")
    first = model.requests[0].messages
    assert find_latest_reminder(first, "setup") is not None
    assert find_latest_reminder(first, "hint") is not None
    assert find_latest_reminder(result.turn.messages, "setup") is not None
    assert find_latest_reminder(result.turn.messages, "hint") is None


async def test_stop_hook_recorded_reminder_saved_on_completion() -> None:
    def stop(ctx: HookContext) -> None:
        ctx.append_reminder(Reminder(name="review", content="reviewed"), recorded=True)

    model = ScriptedModel([text("done")])
    result = await Agent(model=model, hooks=Hooks(stop=[stop])).run("hi")
    assert result.status == "completed"
    assert find_latest_reminder(result.turn.messages, "review") is not None


async def test_values_shared_across_hooks_and_tools() -> None:
    seen: list[Any] = []

    def pre_gen(ctx: HookContext) -> None:
        ctx.values["count"] = ctx.values.get("count", 0) + 1

    async def pre(ctx: HookContext) -> None:
        ctx.values["count"] += 1

    def post_gen(ctx: HookContext) -> None:
        seen.append(dict(ctx.values))

    model = add_script(text("3"))
    hooks = Hooks(pre_generation=[pre_gen], pre_tool_use=[pre], post_generation=[post_gen])
    await Agent(model=model, tools=make_tools(Ledger()), hooks=hooks).run(
        "hi", values={"count": 10, "user": "u1"}
    )
    assert seen == [{"count": 12, "user": "u1"}]


async def test_hook_context_agent_and_hook_point() -> None:
    points: list[tuple[str, bool]] = []
    agent_ref: list[Agent[Any]] = []

    def spy(ctx: HookContext) -> None:
        points.append((ctx.hook_point, ctx.agent is agent_ref[0]))

    hooks = Hooks(
        pre_generation=[spy],
        pre_iteration=[spy],
        pre_tool_use=[spy],
        post_tool_use=[spy],
        stop=[spy],
        post_generation=[spy],
    )
    model = add_script(text("3"))
    agent = Agent(model=model, tools=make_tools(Ledger()), hooks=hooks)
    agent_ref.append(agent)
    await agent.run("hi")
    assert points == [
        ("pre_generation", True),
        ("pre_iteration", True),
        ("pre_tool_use", True),
        ("post_tool_use", True),
        ("pre_iteration", True),
        ("stop", True),
        ("post_generation", True),
    ]


async def test_hooks_merged_and_bool() -> None:
    def h(ctx: HookContext) -> None:
        pass

    def g(ctx: HookContext) -> None:
        pass

    assert not Hooks()
    merged = Hooks(stop=[h]).merged(Hooks(stop=[g], pre_iteration=[g]))
    assert merged.stop == (h, g)
    assert merged.pre_iteration == (g,)
    assert merged
    assert Hooks(stop=[h]).merged(None).stop == (h,)
