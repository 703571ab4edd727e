"""ScriptedModel: scripted answers, request capture and fault injection."""

from __future__ import annotations

import asyncio
import re

import pytest

from dive.errors import OverloadedError, StreamInterruptedError
from dive.llm import (
    MessageStart,
    MessageStop,
    Model,
    ModelRequest,
    ModelResponse,
    ResponseAccumulator,
    StreamEvent,
    Usage,
    collect,
    response_to_events,
)
from dive.messages import Message, TextBlock, ToolCall
from dive.testing import ScriptedModel, ScriptExhaustedError, ScriptItem, Step, call, text, tool_use


class Boom(Exception):
    """A fault injected by a test."""


def req(content: str = "hi") -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=(TextBlock(text=content),)),))


async def events_of(model: ScriptedModel, request: ModelRequest) -> list[StreamEvent]:
    return [e async for e in model.stream(request)]


async def drain(model: ScriptedModel, request: ModelRequest, into: list[StreamEvent]) -> None:
    """Read the stream into ``into``, so the events before a failure stay visible."""
    async for event in model.stream(request):
        into.append(event)


# --- basics ----------------------------------------------------------------------------------


def test_is_a_model() -> None:
    model = ScriptedModel(name="m1", provider="p1")
    assert isinstance(model, Model)
    assert model.name == "m1"
    assert model.provider == "p1"
    assert model.supports_streaming
    assert not ScriptedModel(streaming=False).supports_streaming
    assert ScriptedModel().name == "scripted"
    assert ScriptedModel().provider == "scripted"


async def test_generate_serves_in_order() -> None:
    first = text("one")
    third = tool_use(("f", {"a": 1}))
    model = ScriptedModel([first, "two", third])
    assert await model.generate(req()) == first
    r2 = await model.generate(req())
    assert r2.content == (TextBlock(text="two"),)
    assert await model.generate(req()) == third
    model.assert_consumed()


async def test_stream_serves_in_order() -> None:
    first = text("one")
    third = tool_use(("f", {"a": 1}), text="calling")
    model = ScriptedModel([first, "two", third])
    r1 = await collect(model, req())
    r2 = await collect(model, req())
    r3 = await collect(model, req())
    assert r1.content == first.content
    assert r1.usage == first.usage
    assert r2.text == "two"
    assert r3.content == third.content
    assert r3.stop_reason == "tool_use"
    assert r1.requested_model == "scripted"
    model.assert_consumed()


async def test_generate_and_stream_share_one_script() -> None:
    model = ScriptedModel(["a", "b", "c"])
    assert (await model.generate(req())).text == "a"
    assert (await collect(model, req())).text == "b"
    assert (await model.generate(req())).text == "c"
    assert model.remaining == 0


async def test_stream_yields_the_response_events() -> None:
    r = tool_use(("f", {"x": 1}), text="t")
    events = await events_of(ScriptedModel([r]), req())
    assert events == list(response_to_events(r))
    assert isinstance(events[0], MessageStart)
    assert isinstance(events[-1], MessageStop)


async def test_string_becomes_a_text_answer() -> None:
    model = ScriptedModel(["Hello there."])
    r = await model.generate(req())
    assert r.content == (TextBlock(text="Hello there."),)
    assert r.stop_reason == "end_turn"
    assert r.stop_kind == "finished"
    assert r.tool_calls == ()
    assert r.usage.requests == 1
    assert r.usage.output_tokens >= 1


async def test_empty_string_is_an_empty_answer() -> None:
    r = await ScriptedModel([""]).generate(req())
    assert r.content == ()
    assert r.stop_reason == "end_turn"


async def test_sync_callable_receives_the_request() -> None:
    seen: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        seen.append(request)
        return f"echo {len(request.messages)}"

    model = ScriptedModel([answer, answer])
    r1 = req("first")
    r2 = req("second")
    assert (await model.generate(r1)).text == "echo 1"
    assert (await collect(model, r2)).text == "echo 1"
    assert seen[0] is r1
    assert seen[1] is r2


async def test_async_callable_receives_the_request() -> None:
    seen: list[ModelRequest] = []

    async def answer(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0)
        seen.append(request)
        return tool_use(("lookup", {"q": request.messages[0].text}))

    model = ScriptedModel([answer, answer])
    request = req("what")
    r = await model.generate(request)
    assert seen == [request]
    assert seen[0] is request
    (tc,) = r.tool_calls
    assert dict(tc.arguments) == {"q": "what"}
    streamed = await collect(model, req("again"))
    (tc2,) = streamed.tool_calls
    assert dict(tc2.arguments) == {"q": "again"}


async def test_callable_may_return_a_step() -> None:
    def fail(request: ModelRequest) -> Step:
        return Step(raise_before=Boom("from callable"))

    model = ScriptedModel([fail, lambda request: Step(response="ok", stop_reason="max_tokens")])
    with pytest.raises(Boom, match="from callable"):
        await model.generate(req())
    r = await model.generate(req())
    assert r.text == "ok"
    assert r.stop_kind == "output_limit"


async def test_every_request_is_captured() -> None:
    model = ScriptedModel(["a", "b", "c"])
    r1, r2, r3 = req("1"), req("2"), req("3")
    await model.generate(r1)
    await collect(model, r2)
    await model.generate(r3)
    assert len(model.requests) == 3
    assert model.requests[0] is r1
    assert model.requests[1] is r2
    assert model.requests[2] is r3


async def test_failed_requests_are_captured_too() -> None:
    model = ScriptedModel([Step(raise_before=Boom())])
    request = req()
    with pytest.raises(Boom):
        await model.generate(request)
    assert model.requests == [request]
    with pytest.raises(ScriptExhaustedError):
        await model.generate(req("extra"))
    assert len(model.requests) == 2


async def test_assert_consumed_raises_when_items_are_left() -> None:
    model = ScriptedModel(["a", "b", "c"])
    await model.generate(req())
    with pytest.raises(AssertionError, match="2 script item"):
        model.assert_consumed()
    assert model.remaining == 2


async def test_assert_consumed_passes_when_all_used() -> None:
    ScriptedModel().assert_consumed()
    model = ScriptedModel(["a", "b"])
    await model.generate(req())
    await collect(model, req())
    model.assert_consumed()
    assert model.remaining == 0


async def test_add_appends_to_the_script() -> None:
    model = ScriptedModel(["a"])
    model.add("b", text("c"))
    assert model.remaining == 3
    texts = [(await model.generate(req())).text for _ in range(3)]
    assert texts == ["a", "b", "c"]


async def test_exhaustion_via_generate() -> None:
    model = ScriptedModel(["only"])
    await model.generate(req())
    with pytest.raises(ScriptExhaustedError) as info:
        await model.generate(req())
    message = str(info.value)
    assert "#2" in message
    assert "1 item" in message
    assert "model.add" in message
    assert isinstance(info.value, AssertionError)


async def test_exhaustion_via_stream() -> None:
    model = ScriptedModel()
    with pytest.raises(ScriptExhaustedError, match="request #1"):
        await collect(model, req())


# --- fault injection -------------------------------------------------------------------------


async def test_raise_before_via_stream_yields_no_event() -> None:
    model = ScriptedModel([Step(response="never", raise_before=OverloadedError("Overloaded"))])
    received: list[StreamEvent] = []
    with pytest.raises(OverloadedError, match="Overloaded"):
        await drain(model, req(), received)
    assert received == []
    assert model.remaining == 0


async def test_raise_before_via_generate() -> None:
    model = ScriptedModel([Step(raise_before=Boom("down")), "recovered"])
    with pytest.raises(Boom, match="down"):
        await model.generate(req())
    assert (await model.generate(req())).text == "recovered"


def _event_count(r: ModelResponse) -> int:
    return len(list(response_to_events(r)))


CUT_RESPONSE = tool_use(("f", {"a": 1}), text="Let me call f.")


@pytest.mark.parametrize("n", [0, 1, 2, 3, _event_count(CUT_RESPONSE) - 1])
async def test_cut_after_ends_the_stream_silently(n: int) -> None:
    model = ScriptedModel([Step(response=CUT_RESPONSE, cut_after=n)])
    events = await events_of(model, req())
    assert len(events) == n
    assert events == list(response_to_events(CUT_RESPONSE))[:n]
    assert not any(isinstance(e, MessageStop) for e in events)
    acc = ResponseAccumulator()
    for e in events:
        acc.add(e)
    assert not acc.complete
    with pytest.raises(StreamInterruptedError):
        acc.response()


async def test_cut_stream_collect_raises_interrupted() -> None:
    model = ScriptedModel([Step(response="partial answer", cut_after=3)])
    with pytest.raises(StreamInterruptedError):
        await collect(model, req())


async def test_cut_mid_text_leaves_partial_text() -> None:
    # message_start, content_block_start, text delta: the text is there, the stop is not.
    model = ScriptedModel([Step(response="partial answer", cut_after=3)])
    acc = ResponseAccumulator()
    async for e in model.stream(req()):
        acc.add(e)
    assert acc.content_started
    assert acc.partial() == (TextBlock(text="partial answer"),)


async def test_cut_after_beyond_the_stream_is_no_cut() -> None:
    r = text("whole")
    model = ScriptedModel([Step(response=r, cut_after=_event_count(r) + 5)])
    assert (await collect(model, req())).text == "whole"


@pytest.mark.parametrize("n", [0, 2, 4])
async def test_cut_error_is_raised_after_n_events(n: int) -> None:
    err = StreamInterruptedError("connection reset mid-stream")
    model = ScriptedModel([Step(response=CUT_RESPONSE, cut_after=n, cut_error=err)])
    received: list[StreamEvent] = []
    with pytest.raises(StreamInterruptedError) as info:
        await drain(model, req(), received)
    assert info.value is err
    assert len(received) == n
    assert received == list(response_to_events(CUT_RESPONSE))[:n]


async def test_cut_via_generate_raises() -> None:
    model = ScriptedModel(
        [Step(response="x", cut_after=2), Step(response="y", cut_after=2, cut_error=Boom("cut"))]
    )
    with pytest.raises(ConnectionResetError):
        await model.generate(req())
    with pytest.raises(Boom, match="cut"):
        await model.generate(req())


async def test_delay_via_generate() -> None:
    loop = asyncio.get_running_loop()
    model = ScriptedModel([Step(response="late", delay=0.05)])
    t0 = loop.time()
    r = await model.generate(req())
    elapsed = loop.time() - t0
    assert r.text == "late"
    assert elapsed >= 0.04
    assert elapsed < 5


async def test_delay_via_stream_comes_before_the_first_event() -> None:
    loop = asyncio.get_running_loop()
    model = ScriptedModel([Step(response="late", delay=0.05)])
    t0 = loop.time()
    stream = model.stream(req())
    first = await anext(stream)
    elapsed = loop.time() - t0
    assert isinstance(first, MessageStart)
    assert elapsed >= 0.04
    assert elapsed < 5
    rest = [e async for e in stream]
    assert isinstance(rest[-1], MessageStop)


async def test_event_delay_waits_before_each_event() -> None:
    loop = asyncio.get_running_loop()
    r = text("slow")
    count = _event_count(r)
    model = ScriptedModel([Step(response=r, event_delay=0.01)])
    t0 = loop.time()
    out = await collect(model, req())
    elapsed = loop.time() - t0
    assert out.text == "slow"
    assert elapsed >= 0.008 * count
    assert elapsed < 5


async def test_zero_delay_does_not_wait_long() -> None:
    loop = asyncio.get_running_loop()
    model = ScriptedModel(["fast"])
    t0 = loop.time()
    await model.generate(req())
    assert loop.time() - t0 < 1


async def test_stop_reason_override_via_generate() -> None:
    base = text("cut short")
    model = ScriptedModel([Step(response=base, stop_reason="max_tokens")])
    r = await model.generate(req())
    assert r.stop_reason == "max_tokens"
    assert r.stop_kind == "output_limit"
    assert r.content == base.content
    assert r.usage == base.usage


async def test_stop_reason_override_via_stream() -> None:
    model = ScriptedModel(
        [
            Step(response="cut short", stop_reason="max_tokens"),
            Step(response=tool_use(("f", {})), stop_reason="model_context_window_exceeded"),
        ]
    )
    r1 = await collect(model, req())
    assert r1.stop_reason == "max_tokens"
    assert r1.stop_kind == "output_limit"
    assert r1.text == "cut short"
    r2 = await collect(model, req())
    assert r2.stop_kind == "context_limit"
    assert len(r2.tool_calls) == 1


async def test_step_without_response_is_an_empty_answer() -> None:
    r = await ScriptedModel([Step()]).generate(req())
    assert r.content == ()
    assert r.stop_reason == "end_turn"


def test_step_resolved() -> None:
    assert Step(response="x").resolved().text == "x"
    assert Step().resolved().content == ()
    resolved = Step(response=text("y"), stop_reason="refusal").resolved()
    assert resolved.stop_reason == "refusal"
    assert resolved.stop_kind == "refusal"


# --- helpers ---------------------------------------------------------------------------------


def test_text_helper() -> None:
    r = text("Hello")
    assert r.content == (TextBlock(text="Hello"),)
    assert r.stop_reason == "end_turn"
    assert r.stop_kind == "finished"
    assert r.usage.requests == 1
    assert r.usage.output_tokens >= 1
    assert r.usage.known


def test_text_helper_options() -> None:
    u = Usage(input_tokens=1, output_tokens=2)
    r = text("Hi", stop_reason="max_tokens", usage=u, id="msg_1", model="m")
    assert r.stop_kind == "output_limit"
    assert r.usage == u
    assert r.id == "msg_1"
    assert r.model == "m"
    assert text("").content == ()


def test_call_helper() -> None:
    c = call("get_weather", {"city": "Paris"})
    assert c == ToolCall(id="", name="get_weather", arguments={"city": "Paris"})
    assert call("now") == ToolCall(id="", name="now")
    assert call("f", id="x1").id == "x1"


CALL_ID = re.compile(r"call_\d+")


def test_tool_use_helper_builds_blocks() -> None:
    r = tool_use(call("a", {"x": 1}), ("b", {"y": [1, 2]}), text="Working on it.")
    assert r.stop_reason == "tool_use"
    assert r.stop_kind == "tool_use"
    first, *calls = r.content
    assert first == TextBlock(text="Working on it.")
    assert [(c.name, dict(c.arguments)) for c in r.tool_calls] == [
        ("a", {"x": 1}),
        ("b", {"y": [1, 2]}),
    ]
    assert calls == list(r.tool_calls)
    assert r.usage.requests == 1
    assert r.usage.output_tokens >= 1


def test_tool_use_without_text_has_only_calls() -> None:
    r = tool_use(("f", {}))
    assert len(r.content) == 1
    assert isinstance(r.content[0], ToolCall)


def test_tool_use_ids_are_filled_and_unique_across_calls() -> None:
    r1 = tool_use(("f", {}), ("g", {}))
    r2 = tool_use(call("f"), call("h"))
    r3 = tool_use(("f", {}))
    ids = [c.id for r in (r1, r2, r3) for c in r.tool_calls]
    assert len(ids) == 5
    assert all(CALL_ID.fullmatch(i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_tool_use_keeps_explicit_ids() -> None:
    r = tool_use(call("f", id="mine"), ("g", {}))
    a, b = r.tool_calls
    assert a.id == "mine"
    assert CALL_ID.fullmatch(b.id)


def test_tool_use_options() -> None:
    u = Usage(output_tokens=9)
    r = tool_use(("f", {}), stop_reason="max_tokens", usage=u)
    assert r.stop_kind == "output_limit"
    assert r.usage == u


async def test_mixed_script_items() -> None:
    async def later(request: ModelRequest) -> str:
        return "async"

    items: list[ScriptItem] = [
        "plain",
        text("helper"),
        tool_use(("f", {})),
        Step(response="stepped"),
        lambda request: "sync",
        later,
    ]
    model = ScriptedModel(items)
    out = [await model.generate(req()) for _ in items]
    assert [r.text for r in out] == ["plain", "helper", "", "stepped", "sync", "async"]
    assert out[2].stop_kind == "tool_use"
    model.assert_consumed()
