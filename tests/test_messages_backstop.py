"""The encoder backstop: ``answer_dangling_calls``, and what each provider sends with it."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from dive.llm import ModelRequest, ModelSettings
from dive.messages import (
    UNKNOWN_RESULT_TEXT,
    Message,
    TextBlock,
    ToolCall,
    ToolResult,
    answer_dangling_calls,
    messages_to_json,
    validate_complete_turns,
)
from dive.providers._history import sendable
from dive.providers.anthropic import build_request
from dive.providers.google import build_contents
from dive.providers.openai import chat_request, responses_request


def call(call_id: str, name: str = "f") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={})


def calls(*ids: str) -> Message:
    return Message(role="assistant", content=tuple(call(i, f"tool_{i}") for i in ids))


def result(call_id: str, text: str = "ok") -> Message:
    return Message(
        role="tool",
        name=f"tool_{call_id}",
        content=(
            ToolResult(
                tool_call_id=call_id, name=f"tool_{call_id}", content=(TextBlock(text=text),)
            ),
        ),
    )


def unknown(call_id: str) -> Message:
    name = f"tool_{call_id}"
    answer = ToolResult(
        tool_call_id=call_id,
        name=name,
        content=(TextBlock(text=UNKNOWN_RESULT_TEXT),),
        is_error=True,
    )
    return Message(role="tool", name=name, content=(answer,))


def user(text: str = "u") -> Message:
    return Message(role="user", content=(TextBlock(text=text),))


def assistant(text: str = "a") -> Message:
    return Message(role="assistant", content=(TextBlock(text=text),))


# --- answer_dangling_calls -------------------------------------------------------------------


def test_unknown_result_text() -> None:
    assert UNKNOWN_RESULT_TEXT == (
        "Unknown result: the turn ended while this call was running. Its result was not "
        "recorded; it may have taken effect, so check before repeating it."
    )


def test_valid_history_is_returned_itself() -> None:
    history = [user(), calls("a", "b"), result("a"), result("b"), assistant(), user()]
    assert answer_dangling_calls(history) is history
    as_tuple = tuple(history)
    assert answer_dangling_calls(as_tuple) is as_tuple
    empty: list[Message] = []
    assert answer_dangling_calls(empty) is empty


def test_valid_history_with_results_out_of_order_is_returned_itself() -> None:
    history = (user(), calls("a", "b", "c"), result("c"), result("a"), result("b"))
    assert answer_dangling_calls(history) is history


def test_missing_results_at_the_end() -> None:
    history = [user(), calls("a", "b")]
    assert list(answer_dangling_calls(history)) == [*history, unknown("a"), unknown("b")]


def test_missing_results_in_the_middle() -> None:
    history = [user(), calls("a"), user("next"), assistant("done")]
    out = answer_dangling_calls(history)
    assert list(out) == [history[0], history[1], unknown("a"), history[2], history[3]]
    validate_complete_turns(out)


def test_partly_answered_group_gets_answers_after_its_results_in_call_order() -> None:
    history = [user(), calls("a", "b", "c", "d"), result("c"), user("more")]
    out = answer_dangling_calls(history)
    assert list(out) == [
        history[0],
        history[1],
        history[2],
        unknown("a"),
        unknown("b"),
        unknown("d"),
        history[3],
    ]
    validate_complete_turns(out)


def test_results_out_of_order_keep_their_order() -> None:
    history = [calls("a", "b", "c"), result("c"), result("a")]
    out = answer_dangling_calls(history)
    assert list(out) == [*history, unknown("b")]
    validate_complete_turns(out)


def test_several_groups() -> None:
    history = [
        user(),
        calls("a", "b"),
        result("b"),
        calls("c"),
        result("c"),
        assistant(),
        calls("d", "e"),
        user("interrupted"),
        calls("f"),
    ]
    out = answer_dangling_calls(history)
    assert list(out) == [
        history[0],
        history[1],
        history[2],
        unknown("a"),
        history[3],
        history[4],
        history[5],
        history[6],
        unknown("d"),
        unknown("e"),
        history[7],
        history[8],
        unknown("f"),
    ]
    validate_complete_turns(out)


def test_only_assistant_calls_are_answered_and_orphans_are_left_alone() -> None:
    history = [user(), result("x"), assistant()]
    assert answer_dangling_calls(history) is history


def test_answer_is_the_exact_unknown_result_message() -> None:
    out = answer_dangling_calls([calls("a")])
    answer = out[-1]
    assert answer.role == "tool"
    assert answer.name == "tool_a"
    assert answer.content == (
        ToolResult(
            tool_call_id="a",
            name="tool_a",
            content=(TextBlock(text=UNKNOWN_RESULT_TEXT),),
            is_error=True,
        ),
    )


def test_input_is_never_mutated() -> None:
    history = [user(), calls("a", "b"), result("b"), calls("c")]
    before = list(history)
    encoded = messages_to_json(history)
    out = answer_dangling_calls(history)
    assert out is not history
    assert history == before
    assert all(x is y for x, y in zip(history, before, strict=True))
    assert messages_to_json(history) == encoded
    assert answer_dangling_calls(out) is out  # answering is idempotent


# --- property --------------------------------------------------------------------------------

Segment = tuple[str, tuple[str, ...], tuple[str, ...]]
"""``("plain", (text,), ())`` or ``("group", call ids, result ids kept, in result order)``."""


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Message], set[str]]:
    """A history of tool groups with some results removed, and the IDs left unanswered."""
    history: list[Message] = []
    removed: set[str] = set()
    n_ids = 0
    for _ in range(draw(st.integers(0, 8))):
        if draw(st.booleans()):
            history.append(draw(st.sampled_from([user("u"), assistant("a"), user("q")])))
            continue
        k = draw(st.integers(1, 4))
        ids = [f"c{n_ids + j}" for j in range(k)]
        n_ids += k
        order = draw(st.permutations(ids))
        kept = [i for i in order if draw(st.booleans())]
        removed.update(i for i in ids if i not in kept)
        history.append(calls(*ids))
        history.extend(result(i) for i in kept)
    return history, removed


def _is_unknown(m: Message) -> bool:
    r = m.tool_result
    return (
        m.role == "tool"
        and r is not None
        and r.is_error
        and r.content == (TextBlock(text=UNKNOWN_RESULT_TEXT),)
    )


@given(histories())
def test_answered_history_is_complete_and_keeps_every_message(
    case: tuple[list[Message], set[str]],
) -> None:
    history, removed = case
    before = list(history)
    out = answer_dangling_calls(history)
    validate_complete_turns(out)
    assert history == before
    if not removed:
        assert out is history
    # every original message, in order, as the same object; the rest are Unknown results
    it = iter(out)
    added: list[Message] = []
    for original in history:
        for m in it:
            if m is original:
                break
            added.append(m)
        else:
            raise AssertionError("an original message is missing from the output")
    added.extend(it)
    assert all(_is_unknown(m) for m in added)
    answered = [m.tool_result.tool_call_id for m in added if m.tool_result is not None]
    assert sorted(answered) == sorted(removed)
    assert answer_dangling_calls(out) is out


# --- what providers send ---------------------------------------------------------------------


def request(history: Sequence[Message]) -> ModelRequest:
    return ModelRequest(messages=tuple(history), settings=ModelSettings(caching=False))


PARTIAL = [user("go"), calls("a", "b"), result("b", "two"), user("and then?")]


def test_sendable_drops_custom_messages_before_answering() -> None:
    note = Message(role="user", kind="custom", content=(TextBlock(text="app note"),))
    history = [user(), calls("a"), note, result("a")]
    out = sendable(history)
    assert list(out) == [history[0], history[1], history[3]]
    valid = [user(), calls("a"), result("a")]
    assert sendable(valid) is valid


def test_anthropic_sends_missing_results_after_results_before_user_text() -> None:
    wire = build_request(request(PARTIAL), "claude-sonnet-4-5")["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "two"}]},
        {
            "type": "tool_result",
            "tool_use_id": "a",
            "content": [{"type": "text", "text": UNKNOWN_RESULT_TEXT}],
            "is_error": True,
        },
        {"type": "text", "text": "and then?"},
    ]


def test_chat_sends_a_tool_message_for_each_missing_result() -> None:
    wire = chat_request(request(PARTIAL), "gpt-5")["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "tool", "user"]
    assert wire[2] == {"role": "tool", "tool_call_id": "b", "content": "two"}
    assert wire[3] == {"role": "tool", "tool_call_id": "a", "content": UNKNOWN_RESULT_TEXT}


def test_responses_sends_a_function_call_output_for_each_missing_result() -> None:
    items = responses_request(request(PARTIAL), "gpt-5")["input"]
    assert [i.get("type") for i in items] == [
        None,
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        None,
    ]
    assert items[3] == {"type": "function_call_output", "call_id": "b", "output": "two"}
    assert items[4] == {
        "type": "function_call_output",
        "call_id": "a",
        "output": UNKNOWN_RESULT_TEXT,
    }


def test_gemini_sends_an_error_function_response_for_each_missing_result() -> None:
    contents, _ = build_contents(PARTIAL)
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[2]["parts"] == [
        {"function_response": {"name": "tool_b", "id": "b", "response": {"output": "two"}}},
        {
            "function_response": {
                "name": "tool_a",
                "id": "a",
                "response": {"error": UNKNOWN_RESULT_TEXT},
            }
        },
        {"text": "and then?"},
    ]


def test_providers_leave_the_history_untouched() -> None:
    history = [user(), calls("a")]
    before = messages_to_json(history)
    build_request(request(history), "claude-sonnet-4-5")
    chat_request(request(history), "gpt-5")
    responses_request(request(history), "gpt-5")
    build_contents(history)
    assert messages_to_json(history) == before
    assert len(history) == 2
