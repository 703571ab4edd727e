"""Governance on every tool origin: each ``ToolDefinition`` field enforced through ``Agent.run``.

The matrix: six origins (``@tool``, ``FunctionTool(...)``, a ``TypedTool`` subclass, a tool a
``Toolset`` serves, a declarer's member, a plain ``Tool`` subclass) by the governance fields
(timeout, retry policy, approval, permissions, effect type → advice, sequential, terminal,
recording). Each origin builds the same governed tool from the same fields, so a field an
origin loses shows up as one failing cell.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

import pytest
from pydantic import BaseModel

from dive.agent import (
    Agent,
    ApprovalDecision,
    HookContext,
    Hooks,
    RunResult,
    ToolApproval,
    ToolCallResultEvent,
    allow,
    deny,
)
from dive.errors import HookAbort, ToolDefinitionError, ToolFatalError
from dive.messages import Message, ToolCall, ToolDefinition, ToolResult, ToolRetryPolicy
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use
from dive.tools import (
    FunctionTool,
    Governance,
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    ToolReturn,
    Toolset,
    TypedTool,
    tool,
)
from dive.tracing import (
    AgentRunInfo,
    AgentRunSpan,
    ChatInfo,
    ChatSpan,
    NopTracer,
    ToolCallInfo,
    ToolSpan,
)
from dive.turns import CancelToken, ToolCallRecord, Turn

GUARD = 3.0  # seconds: a deadlocked test fails instead of hanging
NAME = "governed"
DENIED = "The user declined this tool call; it was not run."
NO_WAIT = ToolRetryPolicy(max_attempts=3, backoff=0.0, max_backoff=0.0)
RETRY_REFUSED = "retry_policy requires idempotent=True or effect_type='read_only'"

Behave = Callable[[ToolContext], Awaitable[ToolOutput]]


# --- the origins --------------------------------------------------------------------------------


class Empty(BaseModel):
    """No arguments."""


@dataclass
class Built:
    """What an origin made: the governed tool and how to hand it to an agent."""

    tool: Tool
    tools: list[Tool] = field(default_factory=lambda: list[Tool]())
    toolsets: list[Toolset] = field(default_factory=lambda: list[Toolset]())


def _fn(behave: Behave) -> Callable[[ToolContext], Awaitable[ToolOutput]]:
    async def governed(ctx: ToolContext) -> ToolOutput:
        return await behave(ctx)

    return governed


def by_decorator(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    t = tool(name=NAME, annotations=ann, **gov)(_fn(behave))
    return Built(tool=t, tools=[t])


def by_function_tool(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    t = FunctionTool(_fn(behave), name=NAME, annotations=ann, **gov)
    return Built(tool=t, tools=[t])


def by_typed_tool(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    class Governed(TypedTool[Empty]):
        input_model = Empty
        tool_name = NAME
        tool_annotations = ann or ToolAnnotations()
        governance: ClassVar[Governance] = cast(Governance, dict(gov))

        async def run(self, input: Empty, ctx: ToolContext) -> ToolOutput:
            return await behave(ctx)

    t = Governed()
    return Built(tool=t, tools=[t])


class Served:
    """A toolset that serves the same tools on every resolution."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = list(tools)

    @property
    def name(self) -> str:
        return "remote"

    async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
        return self._tools


def by_toolset(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    t = FunctionTool(_fn(behave), name=NAME, annotations=ann, **gov)
    return Built(tool=t, toolsets=[Served([t])])


class Declarer(Tool):
    """A provider-style tool whose member is dispatched by name (and not sent)."""

    def __init__(self, member: str) -> None:
        self.declared_tools = (member,)
        self.definition = ToolDefinition(name="provider_kit", origin="provider")

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return "the declarer itself ran"


def by_declarer(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    member = FunctionTool(_fn(behave), name=NAME, annotations=ann, **gov)
    return Built(tool=member, tools=[Declarer(NAME), member])


class Plain(Tool):
    """A ``Tool`` subclass with its definition written out."""

    def __init__(self, behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> None:
        self.definition = ToolDefinition(name=NAME, **gov)
        if ann is not None:
            self.annotations = ann
        self._behave = behave

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return await self._behave(ctx)


def by_plain_tool(behave: Behave, gov: Mapping[str, Any], ann: ToolAnnotations | None) -> Built:
    t = Plain(behave, gov, ann)
    return Built(tool=t, tools=[t])


Build = Callable[[Behave, Mapping[str, Any], "ToolAnnotations | None"], Built]
ORIGINS: dict[str, Build] = {
    "decorator": by_decorator,
    "function_tool": by_function_tool,
    "typed_tool": by_typed_tool,
    "toolset": by_toolset,
    "declarer": by_declarer,
    "plain_tool": by_plain_tool,
}
HALTING = {"declarer"}  # a declarer's member calls halt their batch, so it is always sequential


@pytest.fixture(params=list(ORIGINS))
def origin(request: pytest.FixtureRequest) -> str:
    return request.param


def build(kind: str, behave: Behave, ann: ToolAnnotations | None = None, /, **gov: Any) -> Built:
    """The governed tool as origin ``kind`` makes it, from the same governance fields."""
    return ORIGINS[kind](behave, gov, ann)


# --- helpers ----------------------------------------------------------------------------------


class Runs:
    """A tool body that records each attempt and runs ``script[attempt]`` (last one repeats)."""

    def __init__(self, *script: Callable[[], Awaitable[ToolOutput]]) -> None:
        self.attempts: list[int] = []
        self.ids: list[str] = []
        self.script = script or (_ok,)

    async def __call__(self, ctx: ToolContext) -> ToolOutput:
        self.attempts.append(ctx.attempt)
        self.ids.append(ctx.tool_call_id)
        step = self.script[min(len(self.attempts), len(self.script)) - 1]
        return await step()


async def _ok() -> ToolOutput:
    return "ok"


async def _hang() -> ToolOutput:
    await asyncio.sleep(30)
    return "too late"


async def _flaky() -> ToolOutput:
    raise ConnectionError("network down")


def agent_for(
    built: Built, script: Sequence[ScriptItem], extra: Sequence[Tool] = (), **options: Any
) -> tuple[Agent[Any], ScriptedModel]:
    model = ScriptedModel(script)
    agent = Agent(model=model, tools=[*built.tools, *extra], toolsets=built.toolsets, **options)
    return agent, model


async def run(agent: Agent[Any], **kwargs: Any) -> RunResult[Any]:
    async with asyncio.timeout(GUARD):
        if "tool_results" in kwargs:
            return await agent.run(**kwargs)
        return await agent.run("go", **kwargs)


def result_of(r: RunResult[Any], call_id: str = "c1") -> ToolResult:
    found = [
        res
        for m in r.turn.messages
        if (res := m.tool_result) is not None and res.tool_call_id == call_id
    ]
    assert len(found) == 1, found
    return found[0]


def record_of(r: RunResult[Any], call_id: str = "c1") -> ToolCallRecord:
    (rec,) = [x for x in r.turn.tool_calls if x.id == call_id]
    return rec


def event_of(r: RunResult[Any], call_id: str = "c1") -> ToolCallResultEvent:
    found = [e for e in r.tool_call_results() if e.call.id == call_id]
    return found[-1]


def one_call(*rest: ScriptItem) -> list[ScriptItem]:
    return [tool_use(call(NAME, id="c1")), *rest]


def timed_out(seconds: str) -> str:
    return f'Tool "{NAME}" timed out after {seconds} s.'


# --- timeout: a deadline --------------------------------------------------------------------------


@pytest.mark.parametrize("effect", ["write", "external_side_effect", None])
async def test_timeout_answers_and_records_unknown_for_a_tool_with_effects(
    origin: str, effect: str | None
) -> None:
    body = Runs(_hang)
    built = build(origin, body, timeout=0.05, effect_type=effect)
    agent, model = agent_for(built, one_call(text("gave up")))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    r = await run(agent)
    assert loop.time() - t0 < 1.0  # the deadline, not the handler, ended the call
    assert body.attempts == [1]
    res = result_of(r)
    assert res.is_error
    assert res.text == timed_out("0.05")
    rec = record_of(r)
    assert (rec.state, rec.reconcile, rec.error) == ("unknown", True, timed_out("0.05"))
    assert event_of(r).state == "unknown"
    assert model.requests[1].messages[-1].tool_result == res  # the model is told
    assert r.status == "completed"


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"effect_type": "read_only"}, id="effect_type"),
        pytest.param({"annotations": ToolAnnotations(read_only=True)}, id="annotation"),
    ],
)
async def test_timeout_of_a_read_only_tool_is_a_finished_call(
    origin: str, how: dict[str, Any]
) -> None:
    """A read-only call that timed out had no effect: ``completed`` with its error result."""
    body = Runs(_hang)
    how = dict(how)
    ann = how.pop("annotations", None)
    built = build(origin, body, ann, timeout=0.05, **how)
    assert built.tool.definition.read_only or origin == "plain_tool"
    agent, _ = agent_for(built, one_call(text("gave up")))
    r = await run(agent)
    res = result_of(r)
    assert res.is_error
    assert res.text == timed_out("0.05")
    rec = record_of(r)
    assert (rec.state, rec.reconcile, rec.error) == ("completed", False, timed_out("0.05"))
    assert rec.effect == "read_only"
    assert event_of(r).state == "completed"


async def test_a_sync_function_tool_times_out_while_its_thread_still_runs() -> None:
    release = threading.Event()

    @tool(timeout=0.05, effect_type="write")
    def blocking() -> str:
        release.wait(5)
        return "late"

    model = ScriptedModel([tool_use(call("blocking", id="c1")), text("x")])
    try:
        r = await run(Agent(model=model, tools=[blocking]))
    finally:
        release.set()
    assert result_of(r).text == 'Tool "blocking" timed out after 0.05 s.'
    assert record_of(r).state == "unknown"


async def test_a_call_within_its_deadline_completes(origin: str) -> None:
    built = build(origin, Runs(), timeout=1.0, effect_type="write")
    agent, _ = agent_for(built, one_call(text("x")))
    r = await run(agent)
    assert result_of(r).text == "ok"
    assert record_of(r).state == "completed"


# --- retry policy: idempotent or read-only tools only -------------------------------------------


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"idempotent": True, "effect_type": "write"}, id="idempotent"),
        pytest.param({"effect_type": "read_only"}, id="read_only"),
        pytest.param({"annotations": ToolAnnotations(idempotent=True)}, id="idempotent_hint"),
    ],
)
async def test_retry_policy_retries_an_idempotent_or_read_only_tool(
    origin: str, how: dict[str, Any]
) -> None:
    body = Runs(_flaky, _flaky, _ok)
    how = dict(how)
    ann = how.pop("annotations", None)
    if ann is not None and origin == "plain_tool":
        how["idempotent"] = True  # a plain definition states its fields itself
    built = build(origin, body, ann, retry_policy=NO_WAIT, **how)
    agent, _ = agent_for(built, one_call(text("x")))
    r = await run(agent)
    assert body.attempts == [1, 2, 3]
    assert result_of(r).text == "ok"
    assert record_of(r).state == "completed"
    assert len([e for e in r.tool_call_results() if e.call.id == "c1"]) == 1


@pytest.mark.parametrize("effect", ["write", "external_side_effect", None])
async def test_retry_policy_on_a_non_idempotent_tool_is_refused_at_definition(
    origin: str, effect: str | None
) -> None:
    with pytest.raises(ToolDefinitionError, match=RETRY_REFUSED):
        build(origin, Runs(), retry_policy=NO_WAIT, effect_type=effect)


async def test_a_toolset_building_a_refused_retry_policy_ends_the_turn_error() -> None:
    class Lazy:
        @property
        def name(self) -> str:
            return "lazy"

        async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
            return [FunctionTool(_fn(Runs()), name=NAME, retry_policy=NO_WAIT)]

    model = ScriptedModel([text("never")])
    r = await run(Agent(model=model, toolsets=[Lazy()]))
    assert r.status == "incomplete"
    assert r.outcome is not None
    assert r.outcome.reason == "error"
    error = r.outcome.error or ""
    assert error.startswith("tool resolution error: toolset lazy: ")
    assert f"tool {NAME!r}" in error  # names the tool
    assert RETRY_REFUSED in error
    assert model.requests == []


async def test_a_single_attempt_policy_on_a_non_idempotent_tool_runs_once(origin: str) -> None:
    body = Runs(_flaky, _ok)
    policy = ToolRetryPolicy(max_attempts=1)
    built = build(origin, body, retry_policy=policy, effect_type="write")
    agent, _ = agent_for(built, one_call(text("x")))
    r = await run(agent)
    assert body.attempts == [1]
    assert result_of(r).text == "Tool execution error: network down"


async def test_retry_policy_never_retries_is_error_results_or_fatal_errors(origin: str) -> None:
    async def soft() -> ToolOutput:
        return ToolReturn(content="bad request", is_error=True)

    async def fatal() -> ToolOutput:
        raise ToolFatalError("stop trying")

    for step, expected in ((soft, "bad request"), (fatal, "Tool execution error: stop trying")):
        body = Runs(step, _ok)
        built = build(origin, body, retry_policy=NO_WAIT, idempotent=True)
        agent, _ = agent_for(built, one_call(text("x")))
        r = await run(agent)
        assert body.attempts == [1], step
        assert result_of(r).text == expected


async def test_retry_policy_never_retries_a_cancelled_call(origin: str) -> None:
    started = asyncio.Event()

    async def wait() -> ToolOutput:
        started.set()
        return await _hang()

    body = Runs(wait)
    built = build(origin, body, retry_policy=NO_WAIT, idempotent=True, effect_type="write")
    agent, _ = agent_for(built, one_call())
    token = CancelToken()
    task = asyncio.create_task(run(agent, cancel=token))
    await asyncio.wait_for(started.wait(), GUARD)
    token.cancel()
    r = await task
    assert body.attempts == [1]
    assert r.outcome is not None
    assert r.outcome.reason == "canceled"
    assert record_of(r).state == "unknown"


@pytest.mark.parametrize(
    ("gov", "state"),
    [
        pytest.param({"idempotent": True, "effect_type": "write"}, "unknown", id="idempotent"),
        pytest.param({"effect_type": "read_only"}, "completed", id="read_only"),
    ],
)
async def test_retry_policy_retries_timeouts_and_a_last_timeout_is_answered_as_one(
    origin: str, gov: dict[str, Any], state: str
) -> None:
    policy = ToolRetryPolicy(max_attempts=2, backoff=0.0)
    recovers = Runs(_hang, _ok)
    agent, _ = agent_for(
        build(origin, recovers, timeout=0.03, retry_policy=policy, **gov), one_call(text("x"))
    )
    r = await run(agent)
    assert recovers.attempts == [1, 2]
    assert (result_of(r).text, record_of(r).state) == ("ok", "completed")

    hangs = Runs(_hang)
    agent, _ = agent_for(
        build(origin, hangs, timeout=0.03, retry_policy=policy, **gov), one_call(text("x"))
    )
    r = await run(agent)
    assert hangs.attempts == [1, 2]
    assert result_of(r).text == timed_out("0.03")
    assert record_of(r).state == state


async def test_without_a_retry_policy_nothing_is_retried(origin: str) -> None:
    body = Runs(_flaky, _ok)
    agent, _ = agent_for(build(origin, body, idempotent=True), one_call(text("x")))
    r = await run(agent)
    assert body.attempts == [1]
    assert result_of(r).text == "Tool execution error: network down"


async def test_a_forged_retry_policy_on_a_non_idempotent_tool_still_runs_once() -> None:
    """The definition refuses the policy; the executor does not trust that alone."""
    body = Runs(_flaky, _ok)
    built = build("plain_tool", body, effect_type="write")
    object.__setattr__(built.tool.definition, "retry_policy", NO_WAIT)  # bypasses the check
    agent, _ = agent_for(built, one_call(text("x")))
    r = await run(agent)
    assert body.attempts == [1]
    assert result_of(r).text == "Tool execution error: network down"


# --- requires_approval: the approval gate ---------------------------------------------------------


def session_agent(built: Built, script: Sequence[ScriptItem], **options: Any) -> Agent[Any]:
    session = MemorySessionStore().session("s")
    return agent_for(built, script, session=session, **options)[0]


async def test_requires_approval_suspends_then_an_approval_runs_the_call(origin: str) -> None:
    body = Runs()
    built = build(origin, body, requires_approval=True, effect_type="write", tags=["t"])
    agent = session_agent(built, one_call(text("done")))
    first = await run(agent)
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    (pending,) = first.turn.suspension.pending_tool_calls
    assert (pending.id, pending.reason, pending.started) == ("c1", "approval_required", False)
    assert body.attempts == []  # never started
    assert record_of(first).state == "waiting"

    done = await run(agent, tool_results={"c1": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert body.ids == ["c1"]
    assert result_of(done).text == "ok"
    rec = record_of(done)
    assert (rec.state, rec.effect, rec.tags) == ("completed", "write", ("t",))


@pytest.mark.parametrize("message", [None, "not today"])
async def test_a_denied_approval_answers_the_call_without_running_it(
    origin: str, message: str | None
) -> None:
    body = Runs()
    agent = session_agent(build(origin, body, requires_approval=True), one_call(text("ok")))
    await run(agent)
    done = await run(agent, tool_results={"c1": ToolApproval(approved=False, message=message)})
    assert done.status == "completed"
    assert body.attempts == []
    res = result_of(done)
    assert res.is_error
    assert res.text == (message or DENIED)
    assert record_of(done).state == "completed"


async def test_an_approved_call_runs_under_its_deadline_on_resume(origin: str) -> None:
    body = Runs(_hang)
    built = build(origin, body, requires_approval=True, timeout=0.03, effect_type="write")
    agent = session_agent(built, one_call(text("x")))
    await run(agent)
    done = await run(agent, tool_results={"c1": ToolApproval(approved=True)})
    assert body.ids == ["c1"]
    assert result_of(done).text == timed_out("0.03")
    assert record_of(done).state == "unknown"


async def test_an_approval_policy_sees_each_origins_governance_fields(origin: str) -> None:
    seen: list[tuple[str, str | None, str | None, frozenset[str]]] = []

    def policy(t: Tool, c: ToolCall) -> ApprovalDecision:
        d = t.definition
        seen.append((d.origin, d.effect_type, d.risk_level, d.tags))
        return deny("too risky") if d.risk_level == "critical" else allow()

    for risk, expected in (("critical", "too risky"), ("low", "ok")):
        body = Runs()
        built = build(
            origin,
            body,
            requires_approval=True,
            risk_level=risk,
            effect_type="external_side_effect",
            origin="mcp:files",
            tags=["net"],
        )
        agent, _ = agent_for(built, one_call(text("x")), approval_policy=policy)
        r = await run(agent)
        assert r.status == "completed"  # the policy settled it: no suspension
        assert result_of(r).text == expected
        assert body.attempts == ([] if risk == "critical" else [1])
    assert seen == [
        ("mcp:files", "external_side_effect", "critical", frozenset({"net"})),
        ("mcp:files", "external_side_effect", "low", frozenset({"net"})),
    ]


async def test_without_requires_approval_the_default_policy_runs_the_call(origin: str) -> None:
    body = Runs()
    agent, _ = agent_for(build(origin, body, effect_type="write"), one_call(text("x")))
    r = await run(agent)
    assert r.status == "completed"
    assert body.attempts == [1]


# --- required_permissions: granted to the agent ---------------------------------------------------


def denied_text(missing: str) -> str:
    return (
        f'Permission denied: tool "{NAME}" requires permission(s) {missing} '
        "that this run was not granted."
    )


@pytest.mark.parametrize(
    ("granted", "missing"), [([], "a, b"), (["a", "c"], "b"), (["A", "B"], "a, b")]
)
async def test_missing_permissions_deny_the_call_with_the_exact_text(
    origin: str, granted: list[str], missing: str
) -> None:
    body = Runs()
    built = build(origin, body, required_permissions=["b", "a"])
    agent, model = agent_for(built, one_call(text("x")), granted_permissions=granted)
    r = await run(agent)
    assert body.attempts == []
    res = result_of(r)
    assert res.is_error
    assert res.text == denied_text(missing)
    assert model.requests[1].messages[-1].tool_result == res
    rec = record_of(r)
    assert (rec.state, rec.error) == ("completed", "ToolPermissionError")
    assert r.status == "completed"


@pytest.mark.parametrize("granted", [["a", "b"], ["b", "a", "extra"], ["*"]])
async def test_granted_permissions_let_the_call_run(origin: str, granted: list[str]) -> None:
    body = Runs()
    built = build(origin, body, required_permissions=["a", "b"])
    agent, _ = agent_for(built, one_call(text("x")), granted_permissions=granted)
    r = await run(agent)
    assert body.attempts == [1]
    assert result_of(r).text == "ok"


async def test_the_permission_gate_runs_before_the_approval_gate(origin: str) -> None:
    body = Runs()
    built = build(origin, body, required_permissions=["admin"], requires_approval=True)
    agent = session_agent(built, one_call(text("x")))
    r = await run(agent)
    assert r.status == "completed"  # denied outright: nothing to approve
    assert result_of(r).text == denied_text("admin")
    assert body.attempts == []


# --- effect_type: the reconcile advice ------------------------------------------------------------


async def _cancel_while_running(agent: Agent[Any], started: asyncio.Event) -> RunResult[Any]:
    token = CancelToken()
    task = asyncio.create_task(run(agent, cancel=token))
    await asyncio.wait_for(started.wait(), GUARD)
    token.cancel()
    return await task


def _starts(started: asyncio.Event) -> Runs:
    async def wait() -> ToolOutput:
        started.set()
        return await _hang()

    return Runs(wait)


@pytest.mark.parametrize(
    ("effect", "ann", "next_step"),
    [
        pytest.param(None, None, "reconcile", id="none"),
        pytest.param("write", None, "reconcile", id="write"),
        pytest.param("external_side_effect", None, "reconcile", id="external"),
        pytest.param("read_only", None, "input", id="read_only"),
        pytest.param(None, ToolAnnotations(read_only=True), "input", id="read_only_hint"),
        pytest.param(None, ToolAnnotations(destructive=True), "reconcile", id="destructive_hint"),
    ],
)
async def test_a_stopped_batch_advises_reconcile_unless_the_unknown_call_is_read_only(
    origin: str, effect: str | None, ann: ToolAnnotations | None, next_step: str
) -> None:
    started = asyncio.Event()
    built = build(origin, _starts(started), ann, effect_type=effect)
    agent, _ = agent_for(built, one_call())
    r = await _cancel_while_running(agent, started)
    assert r.status == "incomplete"
    outcome = r.outcome
    assert outcome is not None
    assert (outcome.reason, outcome.next) == ("canceled", next_step)
    # the advice changes, not the record: a started read is still unknown
    assert [(c.id, c.state) for c in outcome.tool_calls] == [("c1", "unknown")]
    assert outcome.tool_calls[0].reconcile is (next_step == "reconcile")


@pytest.mark.parametrize(
    ("effect", "next_step"), [("write", "reconcile"), (None, "reconcile"), ("read_only", "input")]
)
async def test_a_turn_stopped_after_a_timeout_advises_by_the_timed_out_tools_effect(
    origin: str, effect: str | None, next_step: str
) -> None:
    async def abort(ctx: HookContext) -> None:
        raise HookAbort("stop here")

    built = build(origin, Runs(_hang), timeout=0.03, effect_type=effect)
    agent, _ = agent_for(built, one_call(), hooks=Hooks(post_tool_use_failure=[abort]))
    r = await run(agent)
    outcome = r.outcome
    assert outcome is not None
    assert (outcome.reason, outcome.next) == ("hook_abort", next_step)
    assert result_of(r).text == timed_out("0.03")
    state = "completed" if effect == "read_only" else "unknown"
    assert [(c.id, c.state) for c in outcome.tool_calls] == [("c1", state)]


async def test_crash_recovery_advises_by_the_effect_of_each_origins_tool(
    origin: str, request: pytest.FixtureRequest
) -> None:
    """A turn a dead process left ``running`` is closed ``process_exit`` on the next load."""
    for effect, next_step in (("write", "reconcile"), ("read_only", "continue")):
        session = MemorySessionStore().session("s")
        crashed = Turn(
            id="turn_crashed",
            status="running",
            messages=(
                Message.user("write it"),
                Message(role="assistant", content=(ToolCall(id="c1", name=NAME, arguments={}),)),
            ),
            tool_calls=(
                ToolCallRecord(id="c1", name=NAME, state="running", origin="local", effect=effect),
            ),
        )
        await session.checkpoint(crashed, expected_revision=0)
        body = Runs()
        built = build(origin, body, effect_type=effect)
        agent, _ = agent_for(built, [text("ok")], session=session)
        r = await run(agent)
        assert r.status == "completed"
        assert body.attempts == []  # recovery runs nothing
        closed = (await session.turns())[0]
        assert closed.outcome is not None
        assert (closed.outcome.reason, closed.outcome.next) == ("process_exit", next_step)
        assert [(c.state, c.effect) for c in closed.tool_calls] == [("unknown", effect)]


# --- sequential_only ------------------------------------------------------------------------------


class InFlight:
    """Counts calls in flight and the most at once."""

    def __init__(self) -> None:
        self.now = 0
        self.max = 0
        self.order: list[str] = []

    async def __call__(self, ctx: ToolContext) -> ToolOutput:
        self.order.append(ctx.tool_call_id)
        self.now += 1
        self.max = max(self.max, self.now)
        try:
            await asyncio.sleep(0.02)
        finally:
            self.now -= 1
        return ctx.tool_call_id


def _other(flight: InFlight) -> FunctionTool:
    async def other(ctx: ToolContext) -> ToolOutput:
        return await flight(ctx)

    return FunctionTool(other)


@pytest.mark.parametrize(
    ("gov", "ann"),
    [
        pytest.param({"sequential_only": True}, None, id="field"),
        pytest.param({}, ToolAnnotations(sequential_only=True), id="annotation"),
    ],
)
async def test_a_sequential_only_call_makes_its_whole_batch_sequential(
    origin: str, gov: dict[str, Any], ann: ToolAnnotations | None
) -> None:
    flight = InFlight()
    built = build(origin, flight, ann, **gov)
    assert built.tool.definition.sequential_only or origin == "plain_tool"
    script = [
        tool_use(call("other", id="c0"), call(NAME, id="c1"), call("other", id="c2")),
        text("x"),
    ]
    agent, _ = agent_for(built, script, extra=[_other(flight)], parallel_tool_execution=True)
    r = await run(agent)
    assert flight.max == 1
    assert [result_of(r, i).text for i in ("c0", "c1", "c2")] == ["c0", "c1", "c2"]


async def test_without_sequential_only_the_batch_runs_in_parallel(origin: str) -> None:
    flight = InFlight()
    built = build(origin, flight)
    script = [tool_use(call("other", id="c0"), call(NAME, id="c1")), text("x")]
    agent, _ = agent_for(built, script, extra=[_other(flight)], parallel_tool_execution=True)
    await run(agent)
    assert flight.max == (1 if origin in HALTING else 2)


# --- terminal -------------------------------------------------------------------------------------


async def test_a_terminal_call_ends_the_turn_once_its_batch_finishes(origin: str) -> None:
    flight = InFlight()
    built = build(origin, flight, terminal=True)
    script = [tool_use(call(NAME, id="c1"), call("other", id="c0"))]
    agent, model = agent_for(built, script, extra=[_other(flight)])
    r = await run(agent)
    assert r.status == "completed"
    assert len(model.requests) == 1  # no model call after the batch
    model.assert_consumed()
    assert [result_of(r, i).text for i in ("c1", "c0")] == ["c1", "c0"]
    # the terminal call runs after the others, in a parallel batch and a sequential one alike
    assert flight.order == ["c0", "c1"]


async def test_a_failed_terminal_call_does_not_end_the_turn(origin: str) -> None:
    built = build(origin, Runs(_flaky), terminal=True)
    agent, model = agent_for(built, one_call(text("recovered")))
    r = await run(agent)
    assert r.status == "completed"
    assert len(model.requests) == 2
    assert r.output_text == "recovered"


async def test_an_approved_terminal_call_ends_the_resumed_turn() -> None:
    body = Runs()
    built = build("decorator", body, terminal=True, requires_approval=True)
    agent = session_agent(built, one_call())
    await run(agent)
    done = await run(agent, tool_results={"c1": ToolApproval(approved=True)})
    assert body.ids == ["c1"]
    assert done.status == "completed"


async def test_a_terminal_calls_result_is_the_final_output() -> None:
    agent, _ = agent_for(build("decorator", Runs(), terminal=True), one_call())
    r = await run(agent)
    assert r.output_text == "ok"


# --- recording: origin, tags, effect and risk on every record and span ---------------------------


class ToolSpans:
    """A tracer that keeps what each tool-call span was started with."""

    def __init__(self) -> None:
        self.infos: list[ToolCallInfo] = []
        self._nop = NopTracer()

    def start_agent_run(self, info: AgentRunInfo) -> AgentRunSpan:
        return self._nop.start_agent_run(info)

    def start_chat(self, info: ChatInfo) -> ChatSpan:
        return self._nop.start_chat(info)

    def start_tool_call(self, info: ToolCallInfo) -> ToolSpan:
        self.infos.append(info)
        return self._nop.start_tool_call(info)


GOVERNED = {
    "origin": "mcp:files",
    "tags": ["write", "fs"],
    "effect_type": "write",
    "risk_level": "high",
}
RECORDED = ("mcp:files", ("fs", "write"), "write", "high")


def recorded(rec: ToolCallRecord) -> tuple[str | None, tuple[str, ...], str | None, str | None]:
    return rec.origin, rec.tags, rec.effect, rec.risk


async def test_governance_fields_are_copied_to_the_record_the_span_and_the_store(
    origin: str,
) -> None:
    tracer = ToolSpans()
    store = MemorySessionStore()
    built = build(origin, Runs(), **GOVERNED)
    script = [tool_use(call(NAME, id="c1"), call("nope", id="c2")), text("x")]
    agent, _ = agent_for(built, script, tracer=tracer, session=store.session("s"))
    r = await run(agent)
    assert recorded(record_of(r)) == RECORDED
    assert recorded(record_of(r, "c2")) == (None, (), None, None)  # an unknown tool
    (info,) = tracer.infos  # no span for the unknown tool
    assert (info.origin, info.tags, info.effect, info.risk) == RECORDED
    (stored,) = await store.turns("s")
    assert [recorded(c) for c in stored.tool_calls] == [RECORDED, (None, (), None, None)]


async def test_governance_fields_survive_a_suspension_and_its_resume(origin: str) -> None:
    store = MemorySessionStore()
    built = build(origin, Runs(), requires_approval=True, **GOVERNED)
    agent, _ = agent_for(built, one_call(text("x")), session=store.session("s"))
    first = await run(agent)
    assert recorded(record_of(first)) == RECORDED
    assert first.turn.suspension is not None
    done = await run(agent, tool_results={"c1": ToolApproval(approved=True)})
    assert recorded(record_of(done)) == RECORDED
    (stored,) = await store.turns("s")
    assert [recorded(c) for c in stored.tool_calls] == [RECORDED]


async def test_a_stopped_calls_record_keeps_its_governance_fields(origin: str) -> None:
    started = asyncio.Event()
    agent, _ = agent_for(build(origin, _starts(started), **GOVERNED), one_call())
    r = await _cancel_while_running(agent, started)
    assert r.outcome is not None
    assert [recorded(c) for c in r.outcome.tool_calls] == [RECORDED]
