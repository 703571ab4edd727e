"""``RunResult.new_messages()`` / ``all_messages()``: the turn, the whole conversation, replayed."""

from __future__ import annotations

from dive import Agent, Message
from dive.messages import ToolCall, messages_from_json, messages_to_json, validate_complete_turns
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _roles(messages: list[Message] | tuple[Message, ...]) -> list[str]:
    return [m.role for m in messages]


async def test_new_and_all_messages_of_a_first_turn() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 2, "b": 3})), text("5.")])
    result = await Agent(model=model, tools=[add]).run("2 + 3?")
    new = result.new_messages()
    assert _roles(new) == ["user", "assistant", "tool", "assistant"]
    assert new == list(result.turn.messages)
    assert result.history == ()
    assert result.all_messages() == new


async def test_the_lists_are_new_on_every_call() -> None:
    result = await Agent(model=ScriptedModel([text("Hi.")])).run("hi")
    mine = result.all_messages()
    mine.append(Message.user("changed"))
    result.new_messages().clear()
    assert len(result.all_messages()) == 2
    assert len(result.new_messages()) == 2
    assert result.all_messages() is not result.all_messages()


async def test_all_messages_is_the_history_of_the_next_stateless_run() -> None:
    model = ScriptedModel(
        [tool_use(call("add", {"a": 2, "b": 3}, id="c1")), text("5."), text("10.")]
    )
    agent = Agent(model=model, tools=[add])
    first = await agent.run("2 + 3?")
    second = await agent.run("and doubled?", history=first.all_messages())

    # the model saw the whole conversation: the first turn, then the new input
    seen = list(model.requests[-1].messages)
    assert seen == [*first.all_messages(), *second.new_messages()[:1]]
    assert seen[-1].text == "and doubled?"
    assert _roles(seen) == ["user", "assistant", "tool", "assistant", "user"]
    calls = [b for m in seen for b in m.content if isinstance(b, ToolCall)]
    assert [c.id for c in calls] == ["c1"]

    assert second.history == tuple(first.all_messages())
    assert second.all_messages() == [*first.all_messages(), *second.new_messages()]
    assert _roles(second.new_messages()) == ["user", "assistant"]
    validate_complete_turns(second.all_messages())
    model.assert_consumed()


async def test_a_history_survives_json_between_runs() -> None:
    model = ScriptedModel([tool_use(call("add", {"a": 1, "b": 1})), text("2."), text("Yes.")])
    agent = Agent(model=model, tools=[add])
    first = await agent.run("1 + 1?")
    saved = messages_to_json(first.all_messages())
    loaded = messages_from_json(saved)
    assert list(loaded) == first.all_messages()
    second = await agent.run("sure?", history=loaded)
    assert list(model.requests[-1].messages[:-1]) == first.all_messages()
    assert messages_to_json(second.all_messages()).startswith(saved[:-1])


async def test_with_a_session_the_history_is_the_session_s() -> None:
    session = MemorySessionStore().session("s")
    agent = Agent(model=ScriptedModel([text("One."), text("Two.")]))
    first = await agent.run("one", session=session)
    second = await agent.run("two", session=session)
    assert second.history == tuple(first.all_messages())
    assert [m.text for m in second.all_messages()] == ["one", "One.", "two", "Two."]
    assert [m.text for m in second.new_messages()] == ["two", "Two."]
