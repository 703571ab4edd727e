"""dive quickstart: build and validate a history, then run a scripted model conversation.

Run with ``make demo``. No network is needed: the model here is dive's offline
``ScriptedModel``.
"""

from __future__ import annotations

import asyncio

from dive.errors import IncompleteToolTurnError
from dive.llm import ModelRequest, collect
from dive.messages import Message, ToolResult, messages_from_json, messages_to_json
from dive.messages import validate_complete_turns as validate
from dive.testing import ScriptedModel, call, text, tool_use


async def main() -> None:
    print("dive quickstart — offline: using the bundled scripted model (no provider configured)")
    model = ScriptedModel(
        [
            tool_use(call("add", {"a": 2, "b": 3}, id="call_1"), text="Let me add those."),
            text("2 + 3 = 5."),
        ]
    )
    history = [Message.user("What is 2 + 3?")]
    first = await collect(model, ModelRequest(system="You add numbers.", messages=tuple(history)))
    history.append(first.message())
    for c in first.tool_calls:
        answer = int(c.arguments["a"]) + int(c.arguments["b"])  # type: ignore[arg-type]
        print(f"  model called {c.name}({dict(c.arguments)}) -> {answer}")
        history.append(Message.tool(ToolResult(tool_call_id=c.id, name=c.name, content=str(answer))))
    second = await collect(model, ModelRequest(messages=tuple(history)))
    history.append(second.message())
    print(f"  model answered: {second.text!r} (stop: {second.stop_kind})")

    validate(history)
    restored = messages_from_json(messages_to_json(history))
    assert restored == tuple(history)
    print(f"  history of {len(history)} messages is valid and round-trips through JSON")
    try:
        validate(history[:2])
    except IncompleteToolTurnError as err:
        print(f"  a cut history is refused: {err}")
    model.assert_consumed()


if __name__ == "__main__":
    asyncio.run(main())
