"""dive quickstart (``make demo``): an agent with real tools and a SQLite session.

With a provider configured (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` or ``GEMINI_API_KEY``,
or a ``*_BASE_URL`` for a compatible server) it talks to that provider; otherwise it starts
dive's bundled Anthropic simulator on 127.0.0.1 and talks to it through the official SDK —
the same code path, answered by ``demo_brain`` (a few text patterns, not a model). It says
which on its first line. The answer streams as it arrives; tool calls, their results, the
turn record and the usage with its cost are printed. Every turn is saved in
``.dive-example/quickstart.db`` (session ``quickstart``) under the current folder: run it
again and the second run continues the same conversation.
"""

from __future__ import annotations

import ast
import asyncio
import operator
import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import dive
from dive.agent import (
    Agent,
    AgentEvent,
    ModelStreamEvent,
    ToolCallEvent,
    ToolCallResultEvent,
)
from dive.llm import ContentBlockDelta, Model, TextDelta
from dive.messages import validate_complete_turns
from dive.sessions import SQLiteSessionStore
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


PROVIDERS = (
    ("ANTHROPIC", "anthropic:claude-sonnet-4-6"),
    ("OPENAI", "openai:gpt-5"),
    ("GEMINI", "google:gemini-2.5-flash"),
)


def pick_model(stack: ExitStack) -> tuple[Model, str]:
    """A configured provider (a key or a base URL), else the simulator through the SDK."""
    for env, default in PROVIDERS:
        key, base_url = os.environ.get(f"{env}_API_KEY"), os.environ.get(f"{env}_BASE_URL")
        if key or base_url:
            spec = os.environ.get("DIVE_MODEL", default)
            options = {"base_url": base_url} if base_url else {}
            return dive.model(spec, **options), f"using {spec} ({env}_API_KEY or _BASE_URL is set)"
    from dive.providers.anthropic import AnthropicModel
    from dive.testing.anthropic import AnthropicSimulator, SimClock, demo_brain

    sim = stack.enter_context(
        AnthropicSimulator(clock=SimClock(realtime=True), fallback=demo_brain)
    )
    model = AnthropicModel("claude-sonnet-4-6", base_url=sim.url, api_key="offline")
    return model, (
        f"offline: no provider key or base URL is set, so this talks to dive's bundled "
        f"Anthropic simulator at {sim.url} through the official SDK (demo replies, not a real "
        "model; set ANTHROPIC_API_KEY for a real one)"
    )


class Show:
    """Stream the answer's text; one line per tool call and result."""

    def __init__(self) -> None:
        self.mid_line = True  # the "assistant> " prompt is open

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ModelStreamEvent):
            raw = event.event
            if isinstance(raw, ContentBlockDelta) and isinstance(raw.delta, TextDelta):
                print(raw.delta.text, end="", flush=True)
                self.mid_line = not raw.delta.text.endswith("\n")
        elif isinstance(event, ToolCallEvent):
            if self.mid_line:
                print()
            print(f"  → {event.call.name}({dict(event.call.arguments)})")
            self.mid_line = False
        elif isinstance(event, ToolCallResultEvent) and event.result is not None:
            first = event.result.text.splitlines()[0] if event.result.text else ""
            print(f"  ← {first[:70]}{' [error]' if event.result.is_error else ''}")


async def main() -> None:
    with ExitStack() as stack:
        model, note = pick_model(stack)
        print(f"dive quickstart — {note}")
        folder = Path.cwd() / ".dive-example"
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
            earlier = len(await session.turns())
            prompt = (
                "What did I ask you before? And what is 7 * 6?"
                if earlier
                else "What is in the examples folder, and what is (2 + 3) * 4?"
            )
            print(f"you> {prompt}\nassistant> ", end="")
            result = await agent.run(prompt, on_event=Show())
            print()
            history = await session.messages()
            validate_complete_turns(history)
            turn = result.turn
            calls = ", ".join(f"{c.name} {c.state}" for c in turn.tool_calls) or "none"
            print(
                f"turn record: {turn.id} {turn.status} · {turn.model_calls} model calls · "
                f"tool calls: {calls} · saved: {result.persistence}"
            )
            print(
                f"session quickstart: {earlier + 1} turn(s), {len(history)} messages in "
                f"{folder.name}/quickstart.db (run again to continue it)"
            )
            print(f"usage: {result.usage}")
            print(result)  # one line: status, reason, error and the next step
        finally:
            await store.close()
            close = getattr(model, "aclose", None)  # the provider's SDK client
            if close is not None:
                await close()


if __name__ == "__main__":
    asyncio.run(main())
