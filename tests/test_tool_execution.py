"""Tool execution through ``Agent.run``: failures as data, batches, governance, outputs, events."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from dive.agent import (
    Agent,
    AgentEvent,
    HookContext,
    Hooks,
    RunResult,
    ToolCallEvent,
    ToolCallResultEvent,
)
from dive.errors import ToolFatalError
from dive.messages import (
    Base64Source,
    ImageBlock,
    JSONValue,
    TextBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolRetryPolicy,
)
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use
from dive.tools import (
    FunctionTool,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    ToolProgressEvent,
    ToolReturn,
    ToolStreamEvent,
    TypedTool,
    tool,
)
from dive.turns import ToolCallRecord

HALTED = "Not executed: an earlier tool call in this response failed."
GUARD = 2.0  # seconds: a deadlocked test fails instead of hanging


# --- helpers ----------------------------------------------------------------------------------


def assert_paired(events: Sequence[AgentEvent]) -> None:
    """Every ``tool_call`` event has exactly one ``tool_call_result``, and vice versa."""
    announced = [e.call.id for e in events if isinstance(e, ToolCallEvent)]
    answered = [e.call.id for e in events if isinstance(e, ToolCallResultEvent)]
    assert len(announced) == len(set(announced)), announced
    assert Counter(announced) == Counter(answered)
    for e in events:
        if isinstance(e, ToolCallResultEvent):
            # the result comes after its announcement
            first = next(
                i for i, x in enumerate(events) if isinstance(x, ToolCallEvent) and x.call == e.call
            )
            assert first < list(events).index(e)


async def run_agent(
    agent: Agent[Any], prompt: str = "go"
) -> tuple[RunResult[Any], list[AgentEvent]]:
    """Run with an event collector, under a guard, and check the event pairing."""
    events: list[AgentEvent] = []

    def collect(event: AgentEvent) -> None:
        events.append(event)

    async with asyncio.timeout(GUARD):
        result = await agent.run(prompt, on_event=collect)
    assert_paired(events)
    assert_paired(result.items)
    assert events[-1].type == "turn_ended"
    return result, events


def make_agent(script: Sequence[ScriptItem], tools: Sequence[Any], **options: Any) -> Agent[Any]:
    return Agent(model=ScriptedModel(script), tools=tools, **options)


def results(r: RunResult[Any]) -> list[ToolResult]:
    """Tool results of the turn, in message order."""
    out: list[ToolResult] = []
    for m in r.turn.messages:
        res = m.tool_result
        if m.role == "tool" and res is not None:
            out.append(res)
    return out


def result_of(r: RunResult[Any], call_id: str) -> ToolResult:
    (res,) = [x for x in results(r) if x.tool_call_id == call_id]
    return res


def record_of(r: RunResult[Any], call_id: str) -> ToolCallRecord:
    (rec,) = [x for x in r.turn.tool_calls if x.id == call_id]
    return rec


def result_events(events: Sequence[AgentEvent]) -> list[ToolCallResultEvent]:
    return [e for e in events if isinstance(e, ToolCallResultEvent)]


class Tracker:
    """Counts calls in flight and the maximum reached."""

    def __init__(self) -> None:
        self.now = 0
        self.max = 0
        self.order: list[str] = []

    async def work(self, label: str, seconds: float = 0.01) -> str:
        self.now += 1
        self.max = max(self.max, self.now)
        self.order.append(label)
        try:
            await asyncio.sleep(seconds)
        finally:
            self.now -= 1
        return label


# --- invalid arguments ------------------------------------------------------------------------


def adder(seen: list[tuple[int, int]]) -> FunctionTool:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        seen.append((a, b))
        return a + b

    return add


async def test_happy_path() -> None:
    seen: list[tuple[int, int]] = []
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 2}, id="c1")), text("3")])
    agent = Agent(model=model, tools=[adder(seen)])
    r, _ = await run_agent(agent)
    assert r.status == "completed"
    assert seen == [(1, 2)]
    res = result_of(r, "c1")
    assert res.text == "3"
    assert not res.is_error
    assert [d.name for d in model.requests[0].tools] == ["add"]
    assert model.requests[1].messages[-1].tool_result == res
    assert r.output_text == "3"
    assert record_of(r, "c1").state == "completed"


async def test_invalid_json_arguments_become_an_error_result() -> None:
    seen: list[tuple[int, int]] = []
    bad = ToolCall(id="c1", name="add", arguments={}, raw_arguments='{"a": 1,')
    model = ScriptedModel([tool_use(bad), text("sorry")])
    agent = Agent(model=model, tools=[adder(seen)])
    r, events = await run_agent(agent)
    assert r.status == "completed"
    assert seen == []
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text.startswith('Invalid arguments for tool "add"')
    assert "not a JSON object" in res.text
    assert '{"a": 1,' in res.text
    # the model saw the error and the loop went on to the final answer
    assert model.requests[1].messages[-1].tool_result == res
    assert r.output_text == "sorry"
    (ev,) = result_events(events)
    assert ev.result == res
    assert ev.state == "completed"


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"a": "x", "b": 1}, "a: "),
        ({"a": 1}, "b: Field required"),
        ({"a": 1, "b": 2, "z": 3}, "z: "),
        ({"a": [1], "b": {"x": 1}}, "b: "),
    ],
)
async def test_schema_violation_becomes_an_error_result(
    arguments: dict[str, Any], problem: str
) -> None:
    seen: list[tuple[int, int]] = []
    model = ScriptedModel([tool_use(call("add", arguments, id="c1")), text("ok")])
    agent = Agent(model=model, tools=[adder(seen)])
    r, _ = await run_agent(agent)
    assert r.status == "completed"
    assert seen == []
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text.startswith('Invalid arguments for tool "add": ')
    assert problem in res.text
    assert len(model.requests) == 2
    assert record_of(r, "c1").state == "completed"


class Query(BaseModel):
    q: str
    limit: int = 3


class TypedSearch(TypedTool[Query]):
    input_model = Query
    tool_name = "search"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Query] = []

    async def run(self, input: Query, ctx: ToolContext) -> str:
        self.seen.append(input)
        return f"{input.q}:{input.limit}"


async def test_typed_tool_gets_a_validated_model_and_rejects_bad_input() -> None:
    t = TypedSearch()
    model = ScriptedModel(
        [
            tool_use(call("search", {"q": "x"}, id="ok"), call("search", {}, id="bad")),
            text("done"),
        ]
    )
    r, _ = await run_agent(Agent(model=model, tools=[t]))
    assert t.seen == [Query(q="x", limit=3)]
    assert result_of(r, "ok").text == "x:3"
    bad = result_of(r, "bad")
    assert bad.is_error
    assert bad.text == 'Invalid arguments for tool "search": q: Field required'


class Options(BaseModel):
    verbose: bool = False


class Status(TypedTool[Options]):
    input_model = Options
    tool_name = "status"

    async def run(self, input: Options, ctx: ToolContext) -> str:
        return f"verbose={input.verbose}"


async def test_typed_tool_empty_input_is_an_empty_object() -> None:
    model = ScriptedModel([tool_use(call("status", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[Status()]))
    assert result_of(r, "c1").text == "verbose=False"


# --- tool exceptions ----------------------------------------------------------------------------


async def test_tool_exception_becomes_an_error_result_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    def boom() -> str:
        raise ValueError("kaput")

    caplog.set_level(logging.ERROR, logger="dive.agent")
    model = ScriptedModel([tool_use(call("boom", id="c1")), text("it failed")])
    r, _ = await run_agent(Agent(model=model, tools=[boom]))
    assert r.status == "completed"
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == "Tool execution error: kaput"
    assert "Traceback" not in res.text
    assert r.output_text == "it failed"
    logged = [rec for rec in caplog.records if rec.name == "dive.agent"]
    assert logged
    assert any(
        rec.exc_info is not None and isinstance(rec.exc_info[1], ValueError) for rec in logged
    )
    assert record_of(r, "c1").state == "completed"
    assert "kaput" in (record_of(r, "c1").error or "")


async def test_tool_exception_without_message_uses_its_repr() -> None:
    @tool
    async def boom() -> str:
        raise KeyError

    model = ScriptedModel([tool_use(call("boom", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[boom]))
    assert result_of(r, "c1").text == "Tool execution error: KeyError()"


async def test_failures_do_not_stop_later_calls() -> None:
    seen: list[tuple[int, int]] = []

    @tool
    def boom() -> str:
        raise RuntimeError("nope")

    model = ScriptedModel(
        [
            tool_use(
                call("boom", id="c1"),
                call("add", {"a": "bad"}, id="c2"),
                call("add", {"a": 1, "b": 1}, id="c3"),
            ),
            text("done"),
        ]
    )
    r, _ = await run_agent(Agent(model=model, tools=[boom, adder(seen)]))
    assert [x.tool_call_id for x in results(r)] == ["c1", "c2", "c3"]
    assert [x.is_error for x in results(r)] == [True, True, False]
    assert seen == [(1, 1)]


async def test_tool_exception_goes_through_post_tool_use_failure() -> None:
    failed: list[str] = []

    def on_failure(ctx: HookContext) -> None:
        assert ctx.call is not None
        assert ctx.tool_result is not None
        assert ctx.tool_result.is_error
        failed.append(ctx.call.id)

    @tool
    def boom() -> str:
        raise ValueError("x")

    model = ScriptedModel([tool_use(call("boom", id="c1")), text("x")])
    agent = Agent(model=model, tools=[boom], hooks=Hooks(post_tool_use_failure=[on_failure]))
    await run_agent(agent)
    assert failed == ["c1"]


# --- unknown tools ------------------------------------------------------------------------------


def _named(name: str, calls: list[str]) -> FunctionTool:
    def fn() -> str:
        calls.append(name)
        return name

    return FunctionTool(fn, name=name)


async def test_unknown_tool_with_suggestions() -> None:
    called: list[str] = []
    names = ["get_weather", "set_weather", "fetch_weather", "zap_weather", "unrelated"]
    tools = [_named(n, called) for n in names]
    model = ScriptedModel([tool_use(call("weather", id="c1")), text("x")])
    r, events = await run_agent(Agent(model=model, tools=tools))
    assert r.status == "completed"
    assert called == []  # never dispatches a lookalike
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == (
        'Tool "weather" does not exist and was not called. '
        "Did you mean: fetch_weather, get_weather, set_weather. "
        "Call one of the tools declared for this turn."
    )
    rec = record_of(r, "c1")
    assert rec.state == "completed"
    assert (rec.error or "").startswith("UnknownToolError")
    assert [type(e).__name__ for e in events if e.type.startswith("tool_call")] == [
        "ToolCallEvent",
        "ToolCallResultEvent",
    ]


async def test_unknown_tool_single_suggestion_by_edit_distance() -> None:
    called: list[str] = []
    tools = [_named("search", called), _named("unrelated", called)]
    model = ScriptedModel([tool_use(call("serch", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=tools))
    assert result_of(r, "c1").text == (
        'Tool "serch" does not exist and was not called. Did you mean: search. '
        "Call one of the tools declared for this turn."
    )
    assert called == []


async def test_unknown_tool_without_suggestions() -> None:
    called: list[str] = []
    model = ScriptedModel([tool_use(call("zzzzzzzz", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[_named("alpha", called)]))
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == (
        'Tool "zzzzzzzz" does not exist and was not called. '
        "Call one of the tools declared for this turn."
    )
    assert "Did you mean" not in res.text


async def test_unknown_tool_runs_no_hooks() -> None:
    seen: list[str] = []

    def hook(ctx: HookContext) -> None:
        seen.append(ctx.hook_point)

    model = ScriptedModel([tool_use(call("nope", id="c1")), text("x")])
    agent = Agent(
        model=model,
        tools=[_named("alpha", [])],
        hooks=Hooks(pre_tool_use=[hook], post_tool_use=[hook], post_tool_use_failure=[hook]),
    )
    await run_agent(agent)
    assert seen == []


# --- parallel execution --------------------------------------------------------------------------


async def test_parallel_batch_runs_concurrently_and_records_in_call_order() -> None:
    barrier = asyncio.Barrier(3)
    finished: list[str] = []

    @tool
    async def step(label: str, delay: float) -> str:
        async with asyncio.timeout(1.0):  # sequential execution would deadlock here
            await barrier.wait()
        await asyncio.sleep(delay)
        finished.append(label)
        return label

    model = ScriptedModel(
        [
            tool_use(
                call("step", {"label": "a", "delay": 0.04}, id="ca"),
                call("step", {"label": "b", "delay": 0.0}, id="cb"),
                call("step", {"label": "c", "delay": 0.02}, id="cc"),
            ),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[step], parallel_tool_execution=True)
    r, events = await run_agent(agent)
    assert r.status == "completed"
    assert finished == ["b", "c", "a"]
    # recorded (and sent) in call order
    assert [(x.tool_call_id, x.text, x.is_error) for x in results(r)] == [
        ("ca", "a", False),
        ("cb", "b", False),
        ("cc", "c", False),
    ]
    assert [m.tool_result.tool_call_id for m in model.requests[1].messages if m.tool_result] == [
        "ca",
        "cb",
        "cc",
    ]
    # handled (and reported) in completion order
    assert [e.call.id for e in result_events(events)] == ["cb", "cc", "ca"]
    # phase 1 announces every call, in order, before any result
    kinds = [(e.type, e.call.id) for e in events if isinstance(e, ToolCallEvent)]
    assert kinds == [("tool_call", "ca"), ("tool_call", "cb"), ("tool_call", "cc")]
    first_result = next(i for i, e in enumerate(events) if e.type == "tool_call_result")
    last_call = max(i for i, e in enumerate(events) if e.type == "tool_call")
    assert last_call < first_result


async def test_parallel_batch_answers_every_kind_of_failure_in_call_order() -> None:
    seen: list[tuple[int, int]] = []
    ran: list[str] = []

    @tool
    async def boom() -> str:
        await asyncio.sleep(0.01)
        raise ValueError("kaput")

    script = [
        tool_use(
            call("nope", id="c1"),
            call("add", {"a": 1}, id="c2"),
            call("secret", id="c3"),
            call("boom", id="c4"),
            call("add", {"a": 2, "b": 3}, id="c5"),
            ToolCall(id="c6", name="add", raw_arguments="{"),
        ),
        text("done"),
    ]
    agent = make_agent(script, [adder(seen), guarded(ran), boom], parallel_tool_execution=True)
    r, events = await run_agent(agent)
    assert r.status == "completed"
    assert seen == [(2, 3)]
    assert ran == []
    assert [(x.tool_call_id, x.is_error) for x in results(r)] == [
        ("c1", True),
        ("c2", True),
        ("c3", True),
        ("c4", True),
        ("c5", False),
        ("c6", True),
    ]
    assert result_of(r, "c4").text == "Tool execution error: kaput"
    assert result_of(r, "c5").text == "5"
    assert len(result_events(events)) == 6
    assert all(rec.state == "completed" for rec in r.turn.tool_calls)


async def test_parallel_by_default_with_results_in_model_order() -> None:
    tracker = Tracker()

    @tool
    async def work(label: str) -> str:
        return await tracker.work(label)

    script = [tool_use(*[call("work", {"label": str(i)}) for i in range(4)]), text("x")]
    result, _ = await run_agent(make_agent(script, [work]))
    assert tracker.max == 4
    calls = [c.id for m in result.turn.messages for c in m.tool_calls]
    assert [r.tool_call_id for r in results(result)] == calls
    assert [r.text for r in results(result)] == ["0", "1", "2", "3"]


async def test_sequential_when_parallel_is_off() -> None:
    tracker = Tracker()

    @tool
    async def work(label: str) -> str:
        return await tracker.work(label)

    script = [tool_use(*[call("work", {"label": str(i)}) for i in range(4)]), text("x")]
    await run_agent(make_agent(script, [work], parallel_tool_execution=False))
    assert tracker.max == 1
    assert tracker.order == ["0", "1", "2", "3"]


async def test_parallel_without_limit_runs_all_at_once() -> None:
    tracker = Tracker()

    @tool
    async def work(label: str) -> str:
        return await tracker.work(label)

    script = [tool_use(*[call("work", {"label": str(i)}) for i in range(5)]), text("x")]
    await run_agent(make_agent(script, [work], parallel_tool_execution=True))
    assert tracker.max == 5


async def test_max_tool_concurrency_bounds_calls_in_flight() -> None:
    tracker = Tracker()

    @tool
    async def work(label: str) -> str:
        return await tracker.work(label)

    script = [tool_use(*[call("work", {"label": str(i)}) for i in range(5)]), text("x")]
    agent = make_agent(script, [work], parallel_tool_execution=True, max_tool_concurrency=2)
    r, _ = await run_agent(agent)
    assert tracker.max == 2
    assert sorted(tracker.order) == ["0", "1", "2", "3", "4"]
    assert [x.text for x in results(r)] == ["0", "1", "2", "3", "4"]


async def test_sequential_only_call_makes_the_whole_batch_sequential() -> None:
    tracker = Tracker()

    @tool
    async def work(label: str) -> str:
        return await tracker.work(label)

    @tool(annotations=ToolAnnotations(sequential_only=True))
    async def exclusive(label: str) -> str:
        return await tracker.work(label)

    script = [
        tool_use(
            call("work", {"label": "a"}),
            call("work", {"label": "b"}),
            call("exclusive", {"label": "c"}),
            call("work", {"label": "d"}),
        ),
        text("x"),
    ]
    await run_agent(make_agent(script, [work, exclusive], parallel_tool_execution=True))
    assert tracker.max == 1
    assert tracker.order == ["a", "b", "c", "d"]


async def test_sync_tools_run_in_worker_threads_in_parallel() -> None:
    threads: list[threading.Thread] = []
    gate = threading.Barrier(2, timeout=1.0)

    @tool
    def blocking(label: str) -> str:
        threads.append(threading.current_thread())
        gate.wait()  # both calls must be in flight at once
        return label

    script = [
        tool_use(call("blocking", {"label": "a"}), call("blocking", {"label": "b"})),
        text("x"),
    ]
    r, _ = await run_agent(make_agent(script, [blocking], parallel_tool_execution=True))
    assert [x.text for x in results(r)] == ["a", "b"]
    assert [x.is_error for x in results(r)] == [False, False]
    assert len(threads) == 2
    assert all(t is not threading.main_thread() for t in threads)


async def test_sync_tool_runs_in_a_worker_thread_async_tool_on_the_loop() -> None:
    seen: dict[str, threading.Thread] = {}

    @tool
    def sync_tool() -> str:
        seen["sync"] = threading.current_thread()
        return "s"

    @tool
    async def async_tool() -> str:
        seen["async"] = threading.current_thread()
        return "a"

    script = [tool_use(call("sync_tool"), call("async_tool")), text("x")]
    await run_agent(make_agent(script, [sync_tool, async_tool]))
    assert seen["sync"] is not threading.current_thread()
    assert seen["sync"] is not threading.main_thread()
    assert seen["async"] is threading.current_thread()


# --- halting ----------------------------------------------------------------------------------


def halting_tools(ran: list[str]) -> list[FunctionTool]:
    @tool(annotations=ToolAnnotations(halts_batch=True))
    def deploy(label: str, fail: bool = False) -> str:
        ran.append(label)
        if fail:
            raise RuntimeError(f"{label} failed")
        return label

    @tool(annotations=ToolAnnotations(halts_batch=True))
    def check(label: str) -> ToolReturn:
        ran.append(label)
        return ToolReturn(content=f"{label} is broken", is_error=True)

    @tool
    def note(label: str) -> str:
        ran.append(label)
        return label

    return [deploy, check, note]


@pytest.mark.parametrize("parallel", [False, True])
async def test_failed_halting_call_halts_later_halting_calls(parallel: bool) -> None:
    ran: list[str] = []
    pre: list[str] = []

    def pre_tool_use(ctx: HookContext) -> None:
        assert ctx.call is not None
        pre.append(ctx.call.id)

    script = [
        tool_use(
            call("note", {"label": "n0"}, id="n0"),
            call("deploy", {"label": "d1", "fail": True}, id="d1"),
            call("note", {"label": "n1"}, id="n1"),
            call("deploy", {"label": "d2"}, id="d2"),
            call("note", {"label": "n2"}, id="n2"),
            call("check", {"label": "k3"}, id="k3"),
        ),
        text("x"),
    ]
    agent = make_agent(
        script,
        halting_tools(ran),
        parallel_tool_execution=parallel,
        hooks=Hooks(pre_tool_use=[pre_tool_use]),
    )
    r, events = await run_agent(agent)
    assert r.status == "completed"
    assert ran == ["n0", "d1", "n1", "n2"]
    assert result_of(r, "d1").text == "Tool execution error: d1 failed"
    for cid in ("d2", "k3"):
        res = result_of(r, cid)
        assert res.is_error
        assert res.text == HALTED
        rec = record_of(r, cid)
        assert rec.state == "completed"
        assert rec.error == "BatchHaltedError"
        # both events are emitted for a halted call, but no hook fires
        assert [e.type for e in events if getattr(e, "call", None) == res_call(r, cid)] == [
            "tool_call",
            "tool_call_result",
        ]
    assert pre == ["n0", "d1", "n1", "n2"]
    assert [x.tool_call_id for x in results(r)] == ["n0", "d1", "n1", "d2", "n2", "k3"]


def res_call(r: RunResult[Any], call_id: str) -> ToolCall:
    for m in r.turn.messages:
        for c in m.tool_calls:
            if c.id == call_id:
                return c
    raise AssertionError(call_id)


async def test_is_error_return_halts_like_an_exception() -> None:
    ran: list[str] = []
    script = [
        tool_use(
            call("check", {"label": "k1"}, id="k1"),
            call("deploy", {"label": "d2"}, id="d2"),
        ),
        text("x"),
    ]
    r, _ = await run_agent(make_agent(script, halting_tools(ran)))
    assert ran == ["k1"]
    assert result_of(r, "k1").text == "k1 is broken"
    assert result_of(r, "d2").text == HALTED


async def test_successful_halting_calls_do_not_halt() -> None:
    ran: list[str] = []
    script = [
        tool_use(call("deploy", {"label": "d1"}), call("deploy", {"label": "d2"})),
        text("x"),
    ]
    r, _ = await run_agent(make_agent(script, halting_tools(ran)))
    assert ran == ["d1", "d2"]
    assert [x.is_error for x in results(r)] == [False, False]


async def test_halt_does_not_outlive_its_response() -> None:
    ran: list[str] = []
    script = [
        tool_use(call("deploy", {"label": "d1", "fail": True})),
        tool_use(call("deploy", {"label": "d2"})),
        text("x"),
    ]
    r, _ = await run_agent(make_agent(script, halting_tools(ran)))
    assert ran == ["d1", "d2"]
    assert [x.is_error for x in results(r)] == [True, False]


async def test_halting_call_with_invalid_input_halts_later_halting_calls() -> None:
    ran: list[str] = []
    script = [
        tool_use(
            call("deploy", {"fail": True}, id="d1"),  # missing "label"
            call("deploy", {"label": "d2"}, id="d2"),
        ),
        text("x"),
    ]
    r, _ = await run_agent(make_agent(script, halting_tools(ran)))
    assert result_of(r, "d1").is_error
    assert ran == []
    assert result_of(r, "d2").text == HALTED


# --- timeouts and retries ----------------------------------------------------------------------


async def test_tool_timeout_answers_and_records_unknown() -> None:
    started: list[str] = []

    @tool(timeout=0.05)
    async def slow() -> str:
        started.append("slow")
        await asyncio.sleep(5)
        return "late"

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    model = ScriptedModel([tool_use(call("slow", id="c1")), text("gave up")])
    r, events = await run_agent(Agent(model=model, tools=[slow]))
    assert loop.time() - t0 < 1.0
    assert started == ["slow"]
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == 'Tool "slow" timed out after 0.05 s.'
    rec = record_of(r, "c1")
    assert rec.state == "unknown"
    assert rec.reconcile
    (ev,) = result_events(events)
    assert ev.state == "unknown"
    assert ev.result == res
    assert model.requests[1].messages[-1].tool_result == res
    assert r.status == "completed"


async def test_timeout_of_read_only_tool_needs_no_reconcile() -> None:
    @tool(timeout=0.02, annotations=ToolAnnotations(read_only=True))
    async def peek() -> str:
        await asyncio.sleep(5)
        return "late"

    model = ScriptedModel([tool_use(call("peek", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[peek]))
    rec = record_of(r, "c1")
    assert rec.state == "completed"  # a read has no effect: finished, with its error result
    assert not rec.reconcile
    assert result_of(r, "c1").text == 'Tool "peek" timed out after 0.02 s.'


async def test_fast_tool_within_timeout_completes() -> None:
    @tool(timeout=1.0)
    async def quick() -> str:
        return "ok"

    model = ScriptedModel([tool_use(call("quick", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[quick]))
    assert result_of(r, "c1").text == "ok"
    assert record_of(r, "c1").state == "completed"


NO_WAIT = ToolRetryPolicy(max_attempts=3, backoff=0.0, max_backoff=0.0)


async def test_retry_policy_retries_until_success() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, retry_policy=NO_WAIT)
    async def flaky(ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        if len(attempts) < 3:
            raise ConnectionError(f"try {len(attempts)}")
        return "finally"

    model = ScriptedModel([tool_use(call("flaky", id="c1")), text("x")])
    r, events = await run_agent(Agent(model=model, tools=[flaky]))
    assert attempts == [1, 2, 3]
    res = result_of(r, "c1")
    assert not res.is_error
    assert res.text == "finally"
    assert len(result_events(events)) == 1


async def test_retry_policy_reports_attempt_count_after_last_failure() -> None:
    attempts: list[int] = []

    @tool(annotations=ToolAnnotations(read_only=True), retry_policy=NO_WAIT)
    def always_fails() -> str:
        attempts.append(1)
        raise ConnectionError(f"fail {len(attempts)}")

    model = ScriptedModel([tool_use(call("always_fails", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[always_fails]))
    assert len(attempts) == 3
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text.startswith("Tool execution error: fail 3")
    assert "3 attempts" in res.text


async def test_retry_policy_never_retries_tool_fatal_error() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, retry_policy=NO_WAIT)
    async def fatal() -> str:
        attempts.append(1)
        raise ToolFatalError("do not retry")

    model = ScriptedModel([tool_use(call("fatal", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[fatal]))
    assert attempts == [1]
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == "Tool execution error: do not retry"


async def test_retry_policy_never_retries_is_error_results() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, retry_policy=NO_WAIT)
    async def soft_fail() -> ToolReturn:
        attempts.append(1)
        return ToolReturn(content="bad input", is_error=True)

    model = ScriptedModel([tool_use(call("soft_fail", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[soft_fail]))
    assert attempts == [1]
    assert result_of(r, "c1").text == "bad input"


async def test_retry_policy_retries_timeouts() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, timeout=0.03, retry_policy=NO_WAIT)
    async def sometimes_slow(ctx: ToolContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            await asyncio.sleep(5)
        return f"attempt {ctx.attempt}"

    model = ScriptedModel([tool_use(call("sometimes_slow", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[sometimes_slow]))
    assert attempts == [1, 2]
    assert result_of(r, "c1").text == "attempt 2"
    assert record_of(r, "c1").state == "completed"


async def test_retry_policy_last_attempt_timeout_is_unknown() -> None:
    attempts: list[int] = []

    @tool(idempotent=True, timeout=0.02, retry_policy=ToolRetryPolicy(max_attempts=2, backoff=0.0))
    async def hangs() -> str:
        attempts.append(1)
        await asyncio.sleep(5)
        return "never"

    model = ScriptedModel([tool_use(call("hangs", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[hangs]))
    assert len(attempts) == 2
    assert result_of(r, "c1").text == 'Tool "hangs" timed out after 0.02 s.'
    assert record_of(r, "c1").state == "unknown"


async def test_without_policy_an_exception_is_not_retried() -> None:
    attempts: list[int] = []

    @tool(idempotent=True)
    async def once() -> str:
        attempts.append(1)
        raise ConnectionError("down")

    model = ScriptedModel([tool_use(call("once", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[once]))
    assert attempts == [1]
    assert result_of(r, "c1").text == "Tool execution error: down"


# --- permissions -------------------------------------------------------------------------------


def guarded(ran: list[str]) -> FunctionTool:
    @tool(required_permissions=["b", "a"])
    def secret() -> str:
        ran.append("secret")
        return "classified"

    return secret


async def test_missing_permissions_deny_the_call() -> None:
    ran: list[str] = []
    model = ScriptedModel([tool_use(call("secret", id="c1")), text("x")])
    r, events = await run_agent(Agent(model=model, tools=[guarded(ran)]))
    assert ran == []
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text == (
        'Permission denied: tool "secret" requires permission(s) a, b '
        "that this run was not granted."
    )
    assert record_of(r, "c1").error == "ToolPermissionError"
    assert r.status == "completed"
    assert len(result_events(events)) == 1


async def test_partial_grant_is_still_denied() -> None:
    ran: list[str] = []
    model = ScriptedModel([tool_use(call("secret", id="c1")), text("x")])
    agent = Agent(model=model, tools=[guarded(ran)], granted_permissions=["a", "c"])
    r, _ = await run_agent(agent)
    assert ran == []
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text.startswith('Permission denied: tool "secret" requires permission(s) ')


@pytest.mark.parametrize("granted", [["a", "b"], ["b", "a", "extra"], ["*"]])
async def test_granted_permissions_allow_the_call(granted: list[str]) -> None:
    ran: list[str] = []
    model = ScriptedModel([tool_use(call("secret", id="c1")), text("x")])
    agent = Agent(model=model, tools=[guarded(ran)], granted_permissions=granted)
    r, _ = await run_agent(agent)
    assert ran == ["secret"]
    assert result_of(r, "c1").text == "classified"
    assert not result_of(r, "c1").is_error


# --- output conversion ----------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    temp: float


class Opaque:
    pass


PIXEL = ImageBlock(source=Base64Source(media_type="image/png", data="iVBORw0KGgo="))


@pytest.mark.parametrize(
    ("value", "content", "structured", "is_error"),
    [
        ("hello", (TextBlock(text="hello"),), None, False),
        ("", (), None, False),
        (42, (TextBlock(text="42"),), 42, False),
        (1.5, (TextBlock(text="1.5"),), 1.5, False),
        (True, (TextBlock(text="true"),), True, False),
        (
            {"k": [1, 2], "n": None, "s": "é"},
            (TextBlock(text='{"k":[1,2],"n":null,"s":"é"}'),),
            {"k": [1, 2], "n": None, "s": "é"},
            False,
        ),
        ([1, "a"], (TextBlock(text='[1,"a"]'),), [1, "a"], False),
        (
            Weather(city="Oslo", temp=-3.5),
            (TextBlock(text='{"city":"Oslo","temp":-3.5}'),),
            {"city": "Oslo", "temp": -3.5},
            False,
        ),
        (TextBlock(text="block"), (TextBlock(text="block"),), None, False),
        (
            [TextBlock(text="a"), TextBlock(text="b")],
            (TextBlock(text="a"), TextBlock(text="b")),
            None,
            False,
        ),
        ([TextBlock(text="see"), PIXEL], (TextBlock(text="see"), PIXEL), None, False),
        (ToolReturn(content="broken", is_error=True), (TextBlock(text="broken"),), None, True),
        (
            ToolReturn(content={"a": 1}, display="**a** is 1"),
            (TextBlock(text='{"a":1}'),),
            {"a": 1},
            False,
        ),
        (None, (), None, False),
    ],
)
async def test_output_conversion(
    value: object, content: tuple[Any, ...], structured: JSONValue, is_error: bool
) -> None:
    @tool
    def produce() -> object:
        return value

    model = ScriptedModel([tool_use(call("produce", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[produce]))
    assert result_of(r, "c1") == ToolResult(
        tool_call_id="c1", name="produce", content=content, structured=structured, is_error=is_error
    )
    assert r.status == "completed"


@pytest.mark.parametrize("value", [Opaque(), {1, 2}, {"k": Opaque()}, b"bytes"])
async def test_unconvertible_output_becomes_an_error_result(value: object) -> None:
    @tool
    def produce() -> object:
        return value

    model = ScriptedModel([tool_use(call("produce", id="c1")), text("x")])
    r, _ = await run_agent(Agent(model=model, tools=[produce]))
    res = result_of(r, "c1")
    assert res.is_error
    assert res.text.startswith('Tool "produce" returned a value of type ')
    assert res.text.endswith(" that cannot be sent to the model.")
    assert r.status == "completed"


# --- context, streaming and progress ------------------------------------------------------


async def test_stream_output_and_progress_events() -> None:
    seen: dict[str, str] = {}

    @tool
    async def build(target: str, ctx: ToolContext) -> str:
        seen.update(turn_id=ctx.turn_id, tool_call_id=ctx.tool_call_id, tool_name=ctx.tool_name)
        await ctx.stream_output("compiling ")
        await ctx.report_progress("50%", {"done": 1, "total": 2})
        await ctx.stream_output("linking")
        await ctx.report_progress("100%")
        return target

    model = ScriptedModel([tool_use(call("build", {"target": "app"}, id="c1")), text("x")])
    r, events = await run_agent(Agent(model=model, tools=[build]))
    assert seen == {"turn_id": r.turn.id, "tool_call_id": "c1", "tool_name": "build"}
    streams = [e for e in events if isinstance(e, ToolStreamEvent)]
    assert [(e.tool_call_id, e.text) for e in streams] == [("c1", "compiling "), ("c1", "linking")]
    progress = [e for e in events if isinstance(e, ToolProgressEvent)]
    assert [(e.tool_call_id, e.display, dict(e.metadata)) for e in progress] == [
        ("c1", "50%", {"done": 1, "total": 2}),
        ("c1", "100%", {}),
    ]
    # between the call's announcement and its result
    types = [e.type for e in events if e.type.startswith("tool_")]
    assert types == [
        "tool_call",
        "tool_stream",
        "tool_progress",
        "tool_stream",
        "tool_progress",
        "tool_call_result",
    ]
    assert [e.type for e in r.items if e.type in ("tool_stream", "tool_progress")] == [
        "tool_stream",
        "tool_progress",
        "tool_stream",
        "tool_progress",
    ]


async def test_stream_output_from_parallel_tools_carries_each_call_id() -> None:
    @tool
    async def echo(word: str, ctx: ToolContext) -> str:
        await ctx.stream_output(word)
        await asyncio.sleep(0)
        await ctx.stream_output(word.upper())
        return word

    script = [
        tool_use(call("echo", {"word": "a"}, id="ca"), call("echo", {"word": "b"}, id="cb")),
        text("x"),
    ]
    r, events = await run_agent(make_agent(script, [echo], parallel_tool_execution=True))
    by_call: dict[str, list[str]] = {}
    for e in events:
        if isinstance(e, ToolStreamEvent):
            by_call.setdefault(e.tool_call_id, []).append(e.text)
    assert by_call == {"ca": ["a", "A"], "cb": ["b", "B"]}
    assert r.status == "completed"


async def test_context_exposes_ids_and_values() -> None:
    seen: list[tuple[str, str, str, int, Any]] = []

    @tool
    def look(ctx: ToolContext) -> str:
        seen.append(
            (ctx.turn_id, ctx.tool_call_id, ctx.idempotency_key, ctx.attempt, ctx.values["k"])
        )
        return "ok"

    model = ScriptedModel([tool_use(call("look", id="c9")), text("x")])
    agent = Agent(model=model, tools=[look])
    async with asyncio.timeout(GUARD):
        r = await agent.run("go", values={"k": "v"})
    assert seen == [(r.turn.id, "c9", f"{r.turn.id}:c9", 1, "v")]
    assert r.turn.id.startswith("turn_")


# --- toolsets ----------------------------------------------------------------------------------


class CountingToolset:
    """Returns a fresh tool list on every resolution."""

    def __init__(self, name: str, tools_by_call: Sequence[Sequence[Tool]]) -> None:
        self._name = name
        self._tools = list(tools_by_call)
        self.calls = 0
        self.turn_ids: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
        self.turn_ids.append(ctx.turn_id)
        out = self._tools[min(self.calls, len(self._tools) - 1)]
        self.calls += 1
        return out


class BrokenToolset:
    @property
    def name(self) -> str:
        return "remote"

    async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
        raise ConnectionError("server unreachable")


async def test_toolsets_resolve_before_every_model_call() -> None:
    ran: list[str] = []
    first = _named("first", ran)
    second = _named("second", ran)
    ts = CountingToolset("dyn", [[first], [second], []])
    static = _named("static", ran)
    model = ScriptedModel(
        [
            tool_use(call("first", id="c1")),
            tool_use(call("second", id="c2"), call("first", id="c3")),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[static], toolsets=[ts])
    r, _ = await run_agent(agent)
    assert r.status == "completed"
    assert ts.calls == 3 == len(model.requests)
    assert ts.turn_ids == [r.turn.id] * 3
    assert [[d.name for d in req.tools] for req in model.requests] == [
        ["static", "first"],
        ["static", "second"],
        ["static"],
    ]
    # a tool that left the toolset is unknown on the next call
    assert ran == ["first", "second"]
    assert result_of(r, "c3").is_error
    assert result_of(r, "c3").text.startswith('Tool "first" does not exist')


async def test_toolset_error_ends_the_turn_with_error() -> None:
    model = ScriptedModel([text("never")])
    agent = Agent(model=model, tools=[_named("static", [])], toolsets=[BrokenToolset()])
    r, _ = await run_agent(agent)
    assert r.status == "incomplete"
    assert r.outcome is not None
    assert r.outcome.reason == "error"
    assert r.outcome.error is not None
    assert "tool resolution error: toolset remote" in r.outcome.error
    assert "server unreachable" in r.outcome.error
    assert model.requests == []


async def test_toolset_error_on_a_later_call_closes_the_turn() -> None:
    ran: list[str] = []

    class FailsSecond(CountingToolset):
        async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
            if self.calls >= 1:
                raise RuntimeError("went away")
            return await super().tools(ctx)

    ts = FailsSecond("flaky", [[_named("one", ran)]])
    model = ScriptedModel([tool_use(call("one", id="c1")), text("never")])
    r, _ = await run_agent(Agent(model=model, toolsets=[ts]))
    assert ran == ["one"]
    assert r.status == "incomplete"
    assert r.outcome is not None
    assert r.outcome.reason == "error"
    assert "tool resolution error: toolset flaky" in (r.outcome.error or "")
    assert result_of(r, "c1").text == "one"
    assert len(model.requests) == 1


async def test_toolset_name_clash_ends_the_turn_with_error() -> None:
    ts = CountingToolset("dup", [[_named("static", [])]])
    model = ScriptedModel([text("never")])
    r, _ = await run_agent(Agent(model=model, tools=[_named("static", [])], toolsets=[ts]))
    assert r.status == "incomplete"
    assert r.outcome is not None
    assert r.outcome.reason == "error"
    assert "tool resolution error" in (r.outcome.error or "")
    assert "static" in (r.outcome.error or "")


# --- declarers ------------------------------------------------------------------------------


class Computer(Tool):
    """A provider-defined tool that declares a member."""

    declared_tools = ("screenshot",)

    def __init__(self) -> None:
        self.definition = ToolDefinition(name="computer", description="Use the computer.")
        self.calls: list[str] = []

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        self.calls.append(ctx.tool_call_id)
        return "computer ran"


async def test_declarer_omits_members_but_member_calls_dispatch() -> None:
    ran: list[str] = []
    computer = Computer()
    member = _named("screenshot", ran)
    model = ScriptedModel(
        [
            tool_use(call("screenshot", id="c1"), call("computer", id="c2")),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[computer, member, _named("other", [])])
    r, _ = await run_agent(agent)
    assert [d.name for d in model.requests[0].tools] == ["computer", "other"]
    assert ran == ["screenshot"]
    assert result_of(r, "c1").text == "screenshot"
    assert computer.calls == ["c2"]
    assert result_of(r, "c2").text == "computer ran"


async def test_without_its_declarer_a_member_is_a_plain_tool() -> None:
    model = ScriptedModel([text("hi")])
    await run_agent(Agent(model=model, tools=[_named("screenshot", [])]))
    assert [d.name for d in model.requests[0].tools] == ["screenshot"]


async def test_declarer_from_a_toolset_omits_static_members() -> None:
    ts = CountingToolset("provider", [[Computer()]])
    model = ScriptedModel([text("hi")])
    await run_agent(Agent(model=model, tools=[_named("screenshot", [])], toolsets=[ts]))
    assert [d.name for d in model.requests[0].tools] == ["computer"]


class Screenshot(Tool):
    """A member of the provider-defined ``computer`` toolset."""

    toolset_name = "computer"

    def __init__(self, name: str, fail: bool = False) -> None:
        self.definition = ToolDefinition(name=name)
        self.fail = fail
        self.calls: list[str] = []

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        self.calls.append(ctx.tool_call_id)
        if self.fail:
            raise RuntimeError("display unavailable")
        return "pixels"


@pytest.mark.parametrize("parallel", [False, True])
async def test_toolset_member_calls_halt_the_batch(parallel: bool) -> None:
    broken = Screenshot("screenshot", fail=True)
    zoom = Screenshot("zoom")
    ran: list[str] = []
    script = [
        tool_use(
            call("screenshot", id="c1"),
            call("other", id="c2"),
            call("zoom", id="c3"),
        ),
        text("x"),
    ]
    agent = make_agent(
        script,
        [Computer(), broken, zoom, _named("other", ran)],
        parallel_tool_execution=parallel,
    )
    r, _ = await run_agent(agent)
    assert broken.calls == ["c1"]
    assert result_of(r, "c1").text == "Tool execution error: display unavailable"
    assert ran == ["other"]
    assert zoom.calls == []
    assert result_of(r, "c3").is_error
    assert record_of(r, "c3").error == "BatchHaltedError"
