"""dive quickstart: an agent with three real tools and a SQLite session, streaming its events.

Run with ``make demo``. With no provider configured it uses dive's offline scripted model
and says so; once provider extras are configured (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) the
same agent runs against the real model. Every turn is saved in
``.dive-example/quickstart.db`` (session ``quickstart``): run it twice and the second run
sees the first one's history.
"""

from __future__ import annotations

import ast
import asyncio
import operator
import os
from collections.abc import Callable
from pathlib import Path

from dive.agent import (
    Agent,
    AgentEvent,
    MessageEvent,
    ToolCallEvent,
    ToolCallResultEvent,
    TurnEndedEvent,
)
from dive.llm import Model
from dive.messages import validate_complete_turns
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool

HERE = Path(__file__).resolve().parent

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b,
    ast.Pow: lambda a, b: a**b,
}


def _eval(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand)
    raise ValueError("only numbers and + - * / ** are allowed")


@tool(effect_type="read_only")
def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression.

    Args:
        expression: numbers with + - * / ** and parentheses, e.g. "(2 + 3) * 4".
    """
    return _eval(ast.parse(expression, mode="eval").body)


@tool(effect_type="read_only")
def list_examples() -> list[str]:
    """List the files in the examples folder."""
    return sorted(p.name for p in HERE.iterdir() if p.is_file())


@tool(effect_type="read_only")
def read_example(name: str, max_lines: int = 20) -> str:
    """Read the first lines of a file in the examples folder.

    Args:
        name: the file name, as listed by list_examples.
        max_lines: how many lines to return.
    """
    path = (HERE / name).resolve()
    if path.parent != HERE or not path.is_file():
        raise ValueError(f"{name!r} is not a file in the examples folder")
    return "\n".join(path.read_text().splitlines()[:max_lines])


def offline_model() -> Model:
    """A scripted model that uses the tools the way a real one would."""
    return ScriptedModel(
        [
            tool_use(call("list_examples", {}), text="I'll look at the examples first."),
            tool_use(call("read_example", {"name": "quickstart.py", "max_lines": 3})),
            tool_use(call("calculate", {"expression": "(2 + 3) * 4"})),
            text(
                "The examples folder holds the quickstart, whose docstring says it runs an "
                "agent with two real tools; and (2 + 3) * 4 = 20."
            ),
        ],
        name="scripted-demo",
    )


def pick_model() -> tuple[Model, str]:
    """A real provider when one is configured (a key or a base URL), else the offline model."""
    from dive.providers import model as resolve

    choices = (
        ("ANTHROPIC", "anthropic:claude-sonnet-4-6"),
        ("OPENAI", "openai:gpt-5"),
        ("GEMINI", "google:gemini-2.5-flash"),
    )
    for env, default in choices:
        key = os.environ.get(f"{env}_API_KEY")
        base_url = os.environ.get(f"{env}_BASE_URL")
        if key or base_url:
            spec = os.environ.get("DIVE_MODEL", default)
            options = {"base_url": base_url} if base_url else {}
            return resolve(spec, **options), f"using {spec} ({env}_API_KEY or _BASE_URL is set)"
    return offline_model(), "offline: no provider configured, using the bundled scripted model"


async def show(event: AgentEvent) -> None:
    if isinstance(event, MessageEvent) and event.message.text:
        print(f"assistant> {event.message.text}")
    elif isinstance(event, ToolCallEvent):
        print(f"  tool call  {event.call.name}({dict(event.call.arguments)})")
    elif isinstance(event, ToolCallResultEvent) and event.result is not None:
        first = event.result.text.splitlines()[0] if event.result.text else ""
        print(f"  result     {first[:70]}{' [error]' if event.result.is_error else ''}")
    elif isinstance(event, TurnEndedEvent):
        print(f"turn ended after {event.turn.model_calls} model calls")


async def main() -> None:
    model, note = pick_model()
    print(f"dive quickstart — {note}")
    folder = HERE.parent / ".dive-example"
    folder.mkdir(exist_ok=True)
    store = SQLiteSessionStore(folder / "quickstart.db")
    session = store.session("quickstart")
    agent = Agent(
        model=model,
        instructions="You answer questions about the examples folder and do arithmetic.",
        tools=[list_examples, read_example, calculate],
        session=session,
    )
    try:
        result = await agent.run(
            "What is in the examples folder, and what is (2 + 3) * 4?", on_event=show
        )
        history = await session.messages()
        validate_complete_turns(history)
        turns = await session.turns()
        print(
            f"saved: {result.persistence} in {folder.name}/quickstart.db "
            f"(session quickstart, {len(turns)} turn(s), {len(history)} messages); "
            f"tokens out={result.usage.output_tokens}"
        )
        print(result)  # one line: status, reason, error and the next step
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main())
