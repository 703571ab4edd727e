"""The upstream executor's known quirks, each fixed here (one test per item).

Through the official anthropic SDK against dive's Anthropic simulator.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel

import dive.testing.anthropic as anth
from dive.executor import (
    ExecutionTrace,
    Executor,
    ExecutorConfigError,
    ExecutorIncomplete,
    ExecutorOptions,
    ExecutorRefused,
    ExecutorTool,
    Finding,
    SubmissionContext,
    SubmitTool,
)
from dive.prompts import NoBindings, Prompt
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel

FAST = RetryPolicy(initial_backoff=0.001, max_backoff=0.01, jitter=0.0)


class Answer(BaseModel):
    ok: bool = False
    note: str = ""


@pytest.fixture
async def sim() -> AsyncIterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


def _model(sim: anth.AnthropicSimulator, name: str = "claude-sonnet-4-6") -> AnthropicModel:
    return AnthropicModel(name, base_url=sim.url, api_key="test", retry=FAST)


def _ex(model: AnthropicModel, **kwargs: Any) -> Executor[NoBindings, Answer]:
    kwargs.setdefault("submit_tool", SubmitTool())
    return Executor(model, Prompt("Answer."), response_type=Answer, **kwargs)


def _submit(**result: Any) -> Any:
    return anth.tool_use("submit_result", {"reasoning": "r", "result": result})


async def probe(path: str) -> dict[str, str]:
    """Probe a path."""
    if path == "boom":
        raise ValueError("disk on fire")
    return {"path": path}


def _probe() -> dict[str, ExecutorTool[Any]]:
    return {"probe": ExecutorTool.from_function(probe)}


def test_thinking_budget_is_checked_against_max_tokens_whatever_the_order() -> None:
    with pytest.raises(ExecutorConfigError, match="less than max tokens 2048"):
        ExecutorOptions(thinking_budget=4096, max_tokens=2048)
    with pytest.raises(ExecutorConfigError, match="less than max tokens 2048"):
        ExecutorOptions(max_tokens=2048, thinking_budget=4096)


async def test_the_redirect_is_unforced_under_thinking(sim: anth.AnthropicSimulator) -> None:
    sim.add("plain text", _submit(ok=True))
    model = _model(sim)
    options = ExecutorOptions(thinking_budget=2048)
    await _ex(model, options=options).execute(NoBindings())
    await model.aclose()
    second = sim.requests[1]
    assert "You must call the submit_result tool" in json.dumps(second["messages"][-1])
    assert second.get("tool_choice", {"type": "auto"})["type"] == "auto"


async def test_a_cut_off_tool_call_never_runs_and_the_run_continues(
    sim: anth.AnthropicSimulator,
) -> None:
    ran: list[str] = []

    async def probe_once(path: str) -> dict[str, str]:
        """Probe."""
        ran.append(path)
        return {}

    sim.add(
        anth.reply(
            blocks=[anth.tool_use_block("probe_once", {"reasoning": "r", "path": "x"})],
            stop_reason="max_tokens",
        ),
        _submit(ok=True),
    )
    model = _model(sim)
    tools = {"probe_once": ExecutorTool.from_function(probe_once)}
    answer = await _ex(model).execute(NoBindings(), tools=tools)
    await model.aclose()
    assert answer.ok
    assert ran == []
    assert "cut off at the output limit (max_tokens=8192)" in json.dumps(sim.requests[1].body)


async def test_three_cut_offs_in_a_row_end_incomplete(sim: anth.AnthropicSimulator) -> None:
    for _ in range(3):
        sim.add(anth.text("partial...", stop_reason="max_tokens"))
    model = _model(sim)
    with pytest.raises(ExecutorIncomplete) as info:
        await _ex(model).execute(NoBindings())
    await model.aclose()
    assert info.value.reason == "output_limit"


async def test_a_refusal_raises_and_runs_nothing(sim: anth.AnthropicSimulator) -> None:
    sim.add(anth.text("I can't help with that.", stop_reason="refusal"))
    model = _model(sim)
    with pytest.raises(ExecutorRefused):
        await _ex(model).execute(NoBindings())
    await model.aclose()


async def test_a_handler_crash_is_an_error_result_and_the_run_goes_on(
    sim: anth.AnthropicSimulator,
) -> None:
    sim.add(anth.tool_use("probe", {"reasoning": "r", "path": "boom"}), _submit(ok=True))
    traces: list[ExecutionTrace] = []

    def keep(a: Answer, ctx: SubmissionContext) -> list[Finding]:
        traces.append(ctx.trace)
        return []

    model = _model(sim)
    await _ex(model, result_validators=[keep]).execute(NoBindings(), tools=_probe())
    await model.aclose()
    result = sim.requests[1]["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "disk on fire" in json.dumps(result)
    assert "ValueError" in (traces[0].tool_calls[0].error or "")


async def test_an_all_default_result_commits(sim: anth.AnthropicSimulator) -> None:
    sim.add(_submit())
    model = _model(sim)
    assert await _ex(model).execute(NoBindings()) == Answer()
    await model.aclose()


async def test_only_an_accepted_submission_ends_the_run(sim: anth.AnthropicSimulator) -> None:
    sim.add(anth.tool_use("probe", {"reasoning": "r", "path": "a"}), _submit(note="done"))
    model = _model(sim)
    answer = await _ex(model).execute(NoBindings(), tools=_probe())
    await model.aclose()
    assert answer.note == "done"
    assert len(sim.requests) == 2


async def test_redacted_thinking_is_traced(sim: anth.AnthropicSimulator) -> None:
    sim.add(
        anth.reply(
            blocks=[
                anth.redacted_thinking_block("opaque"),
                anth.tool_use_block("submit_result", {"reasoning": "r", "result": {"ok": True}}),
            ]
        )
    )
    traces: list[ExecutionTrace] = []

    def keep(a: Answer, ctx: SubmissionContext) -> list[Finding]:
        traces.append(ctx.trace)
        return []

    model = _model(sim)
    options = ExecutorOptions(thinking_budget=2048)
    await _ex(model, options=options, result_validators=[keep]).execute(NoBindings())
    await model.aclose()
    assert traces[0].reasoning == [{"round": 0, "redacted": True}]


async def test_one_hour_cache_ttl(sim: anth.AnthropicSimulator) -> None:
    sim.add(_submit(ok=True))
    model = _model(sim)
    await _ex(model, options=ExecutorOptions(cache_ttl="1h")).execute(NoBindings())
    await model.aclose()
    marks = [t.get("cache_control") for t in sim.requests[0]["tools"]]
    assert {"type": "ephemeral", "ttl": "1h"} in marks


async def test_temperature_is_dropped_where_the_model_rejects_sampling(
    sim: anth.AnthropicSimulator,
) -> None:
    sim.add(_submit(ok=True), _submit(ok=True))
    for name, expect in (("claude-opus-4-7", None), ("claude-sonnet-4-6", 0.1)):
        model = _model(sim, name)
        await _ex(model).execute(NoBindings())
        await model.aclose()
        assert sim.requests[-1].get("temperature") == expect, name


async def test_retries_exhausted_is_transient_with_a_requeue_hint(
    sim: anth.AnthropicSimulator,
) -> None:
    from dive.executor import ProviderRetriesExhausted

    for _ in range(3):
        sim.add(anth.SimFault(status=529))
    model = AnthropicModel(
        "claude-sonnet-4-6",
        base_url=sim.url,
        api_key="test",
        retry=RetryPolicy(max_retries=2, initial_backoff=0.001, max_backoff=0.01, jitter=0.0),
    )
    ex = _ex(model, options=ExecutorOptions(retry=RetryPolicy(max_retries=2)))
    with pytest.raises(ProviderRetriesExhausted, match="failed after 2 retries") as info:
        await ex.execute(NoBindings())
    await model.aclose()
    assert info.value.transient
    assert info.value.requeue_after == 300.0
    assert info.value.status == 529


async def test_an_interrupted_stream_is_continued_once(sim: anth.AnthropicSimulator) -> None:
    long = anth.text("x" * 400)
    sim.add(anth.SimCut(after_events=4, reply=long), _submit(ok=True))
    model = _model(sim)
    assert (await _ex(model).execute(NoBindings())).ok
    sim.add(anth.SimCut(after_events=4, reply=long), anth.SimCut(after_events=4, reply=long))
    with pytest.raises(ExecutorIncomplete) as info:
        await _ex(model).execute(NoBindings())
    await model.aclose()
    assert info.value.reason == "stream_interrupted"


async def test_payloads_are_captured_only_when_asked(
    sim: anth.AnthropicSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("K_SERVICE", "reviewer")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    reply = anth.reply(
        blocks=[
            anth.thinking_block("let me think"),
            anth.tool_use_block("submit_result", {"reasoning": "r", "result": {"ok": True}}),
        ]
    )
    sim.add(reply, reply)
    traces: list[ExecutionTrace] = []

    def keep(a: Answer, ctx: SubmissionContext) -> list[Finding]:
        traces.append(ctx.trace)
        return []

    model = _model(sim)
    for capture in (False, True):
        options = ExecutorOptions(
            thinking_budget=2048, capture_payloads=capture, resource_labels={"team": "infra"}
        )
        await _ex(model, options=options, result_validators=[keep]).execute(NoBindings())
    await model.aclose()
    plain, captured = traces
    assert plain.reasoning == []
    assert plain.rounds[0].response is None
    assert captured.reasoning == [{"round": 0, "thinking": "let me think"}]
    assert captured.rounds[0].response is not None
    assert captured.metadata["provider_label"] == "anthropic"
    assert captured.metadata["resource_labels"] == {
        "service_name": "reviewer",
        "product": "unknown",
        "team": "infra",
    }
