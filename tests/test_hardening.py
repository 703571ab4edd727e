"""Regression tests for smaller defects found from outside the repository (issue 12)."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

from dive.agent import Agent, Hooks
from dive.errors import ProviderError, UserError
from dive.llm import ModelRequest, ModelResponse, StreamEvent
from dive.messages import ToolCall, validate_complete_turns
from dive.providers import model as resolve_model
from dive.redaction import REDACTED, redact, register_secret
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, ToolContext, TypedTool, tool
from dive.tracing import NopTracer

# --- tool definitions ----------------------------------------------------------------------------


def test_tool_accepts_sequential_only_as_a_governance_keyword() -> None:
    @tool(sequential_only=True, halts_batch=True)
    async def one(x: int) -> int:
        """One at a time."""
        return x

    assert one.definition.sequential_only
    assert one.definition.halts_batch


def test_suspend_takes_the_prompt_positionally() -> None:
    s = Suspend("Which account?", reason="input_required", metadata={"k": 1})
    assert s.prompt == "Which account?"
    assert s.reason == "input_required"
    with pytest.raises(TypeError):
        Suspend("p", "input_required")  # type: ignore[misc]


# --- a BaseException from a tool -----------------------------------------------------------------


class Stop(BaseException):
    """A caller's own BaseException, not an Exception."""


async def test_a_custom_base_exception_from_a_tool_closes_and_records_the_turn() -> None:
    @tool
    async def explode() -> str:
        """Raise a BaseException."""
        raise Stop("halt")

    store = MemorySessionStore()
    agent = Agent(
        model=ScriptedModel([tool_use(call("explode", id="c1"))]),
        tools=[explode],
        session=store.session("s"),
    )
    with pytest.raises(Stop):
        await agent.run("go")
    [turn] = await store.turns("s")
    assert turn.status == "incomplete"
    assert turn.outcome is not None
    assert {r.id: r.state for r in turn.tool_calls} == {"c1": "unknown"}
    validate_complete_turns(turn.messages)


# --- non-finite floats ---------------------------------------------------------------------------


class Reading(BaseModel):
    value: float


async def test_nan_and_infinity_are_sent_as_standard_json() -> None:
    @tool
    async def measure() -> dict[str, Any]:
        """Measure."""
        return {"v": math.nan, "hi": math.inf, "lo": -math.inf, "ok": 1.5}

    @tool
    async def bare() -> float:
        """A bare float."""
        return math.nan

    @tool
    async def model_out() -> Reading:
        """A model."""
        return Reading(value=math.inf)

    model = ScriptedModel(
        [
            tool_use(call("measure", id="c1"), call("bare", id="c2"), call("model_out", id="c3")),
            text("done"),
        ]
    )
    result = await Agent(model=model, tools=[measure, bare, model_out]).run("go")
    results = {r.tool_call_id: r for m in result.turn.messages if (r := m.tool_result) is not None}
    assert json.loads(results["c1"].text) == {
        "v": "NaN",
        "hi": "Infinity",
        "lo": "-Infinity",
        "ok": 1.5,
    }
    assert results["c1"].structured == {"v": "NaN", "hi": "Infinity", "lo": "-Infinity", "ok": 1.5}
    assert results["c2"].text == "NaN"
    assert json.loads(results["c3"].text) == {"value": "Infinity"}
    for r in results.values():
        json.loads(json.dumps(r.structured, allow_nan=False))  # standard JSON only

    def no_constants(name: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {name} in the record")

    json.loads(result.turn.to_json(), parse_constant=no_constants)


# --- user mistakes get a clear UserError ---------------------------------------------------------


class Lookup(TypedTool[Reading]):
    """A typed tool."""

    input_model = Reading
    tool_name = "lookup"

    async def run(self, input: Reading, ctx: ToolContext) -> str:
        return str(input.value)


def test_a_tool_class_instead_of_an_instance_is_refused() -> None:
    with pytest.raises(
        UserError, match=r"tools=\[Lookup\] passes the class Lookup; pass Lookup\(\)"
    ):
        Agent(model=ScriptedModel(), tools=[Lookup])  # type: ignore[list-item]


def test_tools_not_a_list_is_refused_with_the_fix() -> None:
    def add(a: int) -> int:
        return a

    with pytest.raises(UserError, match=r"write tools=\[add\], not tools=add"):
        Agent(model=ScriptedModel(), tools=add)  # type: ignore[arg-type]


def test_vendor_slash_model_is_not_silently_routed_to_openrouter() -> None:
    with pytest.raises(UserError, match=r"anthropic:claude-sonnet-4-6.*openrouter:anthropic/"):
        resolve_model("anthropic/claude-sonnet-4-6")


# --- custom models -------------------------------------------------------------------------------


class HalfModel:
    """Has everything but stream()."""

    name = "half"
    provider = "custom"
    supports_streaming = False

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=())


def test_a_model_without_stream_names_what_is_missing() -> None:
    with pytest.raises(UserError, match="has no stream"):
        Agent(model=HalfModel())  # type: ignore[arg-type]


class CallsWithoutStopReason:
    """A custom model that never sets stop_reason."""

    name = "custom"
    provider = "custom"
    supports_streaming = False

    def __init__(self) -> None:
        self.n = 0

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise NotImplementedError

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.n += 1
        if self.n == 1:
            return ModelResponse(content=(ToolCall(id="c1", name="ping", arguments={}),))
        return ModelResponse(content=(), stop_reason="end_turn")


async def test_tool_calls_without_a_stop_reason_run_as_tool_use() -> None:
    ran: list[str] = []

    @tool
    async def ping() -> str:
        """Ping."""
        ran.append("ping")
        return "pong"

    result = await Agent(model=CallsWithoutStopReason(), tools=[ping]).run("go")
    assert ran == ["ping"]
    assert result.status == "completed"
    assert ModelResponse(content=(ToolCall(id="x", name="t"),), stop_reason="").stop_kind == (
        "other"
    )


# --- secret redaction ----------------------------------------------------------------------------


def test_redact_replaces_key_shapes_and_configured_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_API_KEY", "acme-secret-value-123")
    register_secret("registered-secret-xyz")
    out = redact(
        "bad key sk-ant-api03-abcdefghijkl and sk-proj-0123456789abcdefXYZ, "
        "Authorization: Bearer abc.def.ghi123, acme-secret-value-123, registered-secret-xyz"
    )
    assert "sk-ant" not in out
    assert "sk-proj" not in out
    assert "abc.def.ghi123" not in out
    assert "acme-secret-value-123" not in out
    assert "registered-secret-xyz" not in out
    assert out.count(REDACTED) == 5
    assert out.startswith("bad key ")


class Spy(NopTracer):
    """Not a NopTracer for dive's fast path: records the errors spans end with."""


async def test_a_key_echoed_by_a_provider_error_is_redacted_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-SECRETSECRETSECRET")
    leaked = ProviderError(
        "invalid x-api-key: sk-ant-api03-SECRETSECRETSECRET", provider="anthropic", status=401
    )
    store = MemorySessionStore()
    noted: list[str] = []

    def on_incomplete(ctx: Any) -> None:
        noted.append(ctx.outcome.error)

    model = ScriptedModel([Step(raise_before=leaked), text("next")])
    agent = Agent(
        model=model, session=store.session("s"), hooks=Hooks(on_incomplete_turn=[on_incomplete])
    )
    result = await agent.run("hi")
    assert result.status == "incomplete"
    assert "SECRET" not in str(result.error)
    assert result.outcome is not None
    assert "SECRET" not in (result.outcome.error or "")
    assert "SECRET" not in noted[0]
    [turn] = await store.turns("s")
    assert "SECRET" not in turn.to_json()
    await agent.run("again")
    assert all("SECRET" not in m.text for m in model.requests[-1].messages)


async def test_a_tool_error_echoing_a_key_is_redacted_before_the_model_sees_it() -> None:
    @tool
    async def leak() -> str:
        """Fail loudly."""
        raise RuntimeError("upstream said: Bearer tok_1234567890abcdef")

    model = ScriptedModel([tool_use(call("leak", id="c1")), text("ok")])
    result = await Agent(model=model, tools=[leak]).run("go")
    sent = [r.text for m in model.requests[1].messages if (r := m.tool_result) is not None]
    assert sent == [f"Tool execution error: upstream said: Bearer {REDACTED}"]
    assert result.status == "completed"


async def test_output_text_skips_stray_whitespace() -> None:
    from dive.llm import ModelResponse
    from dive.messages import TextBlock

    response = ModelResponse(
        content=(TextBlock(text="\n\n"), TextBlock(text="The answer.")), stop_reason="end_turn"
    )
    result = await Agent(model=ScriptedModel([response])).run("hi")
    assert result.output_text == "The answer."
