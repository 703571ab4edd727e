"""Save a conversation as JSON, load it later, and carry on from it (stateless runs).

    python examples/history_json.py

The first run asks a question the agent answers with a tool; its whole conversation
(``result.all_messages()``) is written to ``.dive-example/history.json``. A second run loads
that file and passes it as ``history=``, so the model sees the first exchange before the new
question. dive's scripted model plays the model, so this runs offline; with a real model only
the ``model=`` changes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from dive.agent import Agent
from dive.messages import messages_from_json, messages_to_json
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool

PATH = Path(".dive-example/history.json")


@tool(effect_type="read_only")
def population(city: str) -> int:
    """The population of a city.

    Args:
        city: the city's name.
    """
    return {"Lisbon": 545_000, "Porto": 232_000}.get(city, 0)


def main() -> None:
    model = ScriptedModel(
        [
            tool_use(call("population", {"city": "Lisbon"})),
            text("Lisbon has about 545,000 people."),
            text("That is more than twice Porto's 232,000."),
        ]
    )
    agent = Agent(model=model, tools=[population])

    # 1. A first run; save everything it saw and said.
    first = asyncio.run(agent.run("How many people live in Lisbon?"))
    print("first: ", first.output_text)
    print("result:", first)  # status, then usage
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(messages_to_json(first.all_messages()), encoding="utf-8")
    print(f"saved {len(first.all_messages())} messages to {PATH}")

    # 2. Later (another process, another day): load the history and continue from it.
    history = messages_from_json(PATH.read_text(encoding="utf-8"))
    assert list(history) == first.all_messages(), "the JSON round trip is exact"
    second = asyncio.run(agent.run("And compared to Porto?", history=history))
    print("second:", second.output_text)

    # The model saw the saved conversation, then the new question.
    seen = model.requests[-1].messages
    print("the model saw:", " → ".join(m.role for m in seen))
    assert list(seen[: len(history)]) == list(history)
    print(f"{len(second.new_messages())} new messages; {len(second.all_messages())} in all")


if __name__ == "__main__":
    main()
