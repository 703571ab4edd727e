"""The agent the Temporal tests run, and its worker as a child process (not a test module).

Usage: python -m tests.temporal_app worker <address> <task-queue> <sqlite-file> [heartbeat-s]
       python -m tests.temporal_app resume <sqlite-file> <session> <call-id> <answer>

``worker`` serves the test agent until killed (prints ``READY`` once polling); ``resume``
resumes a suspended turn with a plain ``agent.run(tool_results=...)`` (no Temporal) and prints
``RESUMED <status> <answer text>``.

The model is a stateless brain (its answer is a function of the request), so any worker
process answers a turn the same way: the prompt ``plan: a:x, b:y; c:z`` asks for the calls
``a(x)`` and ``b(y)`` in one response, then ``c(z)``, then the final text ``done: <results>``;
``loop: <tool> <n>`` asks for ``n`` responses of one call each; ``a:key=value`` calls ``a``
with the argument ``key``. Every tool appends a line
``<tool> <arg> <pid>`` to the file named by ``DIVE_TEST_EFFECTS`` when it starts; with
``DIVE_TEST_BLOCK`` set to a tool's name, that tool blocks after announcing itself (so the
test can SIGKILL the worker mid-call); set to ``model``, the model does (a line
``model <messages> <pid>``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

from dive.agent import Agent, Limits
from dive.llm import ModelRequest, ModelResponse, StreamEvent, Usage, response_to_events
from dive.messages import Message, TextBlock, ToolCall, ToolResult
from dive.sessions import SessionStore, SQLiteSessionStore
from dive.temporal import TemporalAgent, connect
from dive.tools import Suspend, Tool, ToolContext, tool


def _prompt_and_turn(messages: tuple[Message, ...]) -> tuple[str, list[Message]]:
    """The turn's prompt text and the messages after it."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and (m.text.startswith("plan:") or m.text.startswith("loop:")):
            return m.text, list(messages[i + 1 :])
    return "", []


def _plan(prompt: str) -> list[list[tuple[str, str]]]:
    if prompt.startswith("loop:"):
        name, count = prompt[len("loop:") :].split()
        return [[(name, str(k))] for k in range(int(count))]
    steps: list[list[tuple[str, str]]] = []
    for part in prompt[len("plan:") :].split(";"):
        calls = [c.strip().split(":", 1) for c in part.split(",") if c.strip()]
        steps.append([(c[0], c[1] if len(c) > 1 else "") for c in calls])
    return steps


def _arguments(spec: str) -> dict[str, str]:
    """``key=value`` names its argument; anything else is the argument ``arg``."""
    key, eq, value = spec.partition("=")
    return {key: value} if eq else {"arg": spec}


class Brain:
    """A stateless model: the next response follows from the prompt and the turn so far."""

    name = "brain"
    provider = "test"
    supports_streaming = True

    def respond(self, request: ModelRequest) -> ModelResponse:
        prompt, turn = _prompt_and_turn(request.messages)
        done = sum(1 for m in turn if m.role == "assistant" and m.tool_calls)
        steps = _plan(prompt)
        usage = Usage(input_tokens=10, output_tokens=5)
        if done < len(steps):
            calls = tuple(
                ToolCall(id=f"c{done}_{i}", name=n, arguments=_arguments(a))
                for i, (n, a) in enumerate(steps[done])
            )
            return ModelResponse(content=calls, stop_reason="tool_use", usage=usage)
        results = [
            b.text
            for m in turn
            for b in m.content
            if isinstance(b, ToolResult)
            for b in b.content
            if isinstance(b, TextBlock)
        ]
        answer = f"done: {', '.join(results)}" if len(results) <= 8 else f"done: {len(results)}"
        return ModelResponse(content=(TextBlock(text=answer),), stop_reason="end_turn", usage=usage)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        await _maybe_block("model")
        return self.respond(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if os.environ.get("DIVE_TEST_BLOCK") == "model":
            _announce("model", str(len(request.messages)))
        await _maybe_block("model")
        for event in response_to_events(self.respond(request)):
            yield event


def _announce(name: str, arg: str) -> None:
    effects = os.environ.get("DIVE_TEST_EFFECTS")
    if effects:
        with open(effects, "a") as f:
            f.write(f"{name} {arg} {os.getpid()}\n")


async def _maybe_block(name: str) -> None:
    if os.environ.get("DIVE_TEST_BLOCK") == name:
        await asyncio.sleep(3600)


@tool
async def charge(arg: str) -> str:
    """Charge an order (not idempotent: never run twice)."""
    _announce("charge", arg)
    await _maybe_block("charge")
    return f"charged {arg}"


@tool(idempotent=True)
async def fetch(arg: str) -> str:
    """Fetch a record (idempotent: safe to repeat)."""
    _announce("fetch", arg)
    await _maybe_block("fetch")
    return f"fetched {arg}"


@tool(effect_type="read_only")
async def lookup(arg: str) -> str:
    """Look a value up."""
    _announce("lookup", arg)
    return f"v{arg}"


@tool
async def ask(arg: str) -> Suspend:
    """Ask a person (suspends the turn)."""
    _announce("ask", arg)
    return Suspend(f"please answer: {arg}")


@tool(idempotent=True)
async def slow(arg: str, ctx: ToolContext) -> str:
    """Wait a while (cancellable)."""
    _announce("slow", arg)
    await asyncio.sleep(float(arg or "30"))
    return "slept"


@tool(timeout=0.3)
async def stall(arg: str) -> str:
    """Take longer than its timeout allows."""
    _announce("stall", arg)
    await asyncio.sleep(5)
    return "too late"


@tool(effect_type="read_only")
async def price(arg: str) -> str:
    """A catalog price (a toolset's tool)."""
    _announce("price", arg)
    return f"${len(arg)}.00"


@tool(effect_type="read_only")
async def big(arg: str) -> str:
    """Return ``arg`` kilobytes of text."""
    return "x" * (int(arg) * 1024)


class Catalog:
    """A toolset: its tools are listed before every model call (on a worker, on Temporal)."""

    name = "catalog"

    async def tools(self, ctx: ToolContext) -> list[Tool]:
        return [price]


def build_agent(*, toolsets: bool = True) -> Agent:
    return Agent(
        model=Brain(),
        tools=[charge, fetch, lookup, ask, slow, stall, big],
        toolsets=[Catalog()] if toolsets else [],
        name="tester",
        limits=Limits(max_model_calls_per_turn=1000),
    )


def temporal_agent(
    store: SessionStore, heartbeat: float = 2.0, *, toolsets: bool = True
) -> TemporalAgent[str, None]:
    return TemporalAgent(
        build_agent(toolsets=toolsets),
        name="tester",
        store=store,
        heartbeat_timeout=timedelta(seconds=heartbeat),
    )


async def _serve(address: str, queue: str, db: Path, heartbeat: float) -> None:
    store = SQLiteSessionStore(db)
    client = await connect(address)
    toolsets = os.environ.get("DIVE_TEST_NO_TOOLSETS") is None
    worker = temporal_agent(store, heartbeat, toolsets=toolsets).worker(
        client,
        task_queue=queue,
        max_concurrent_activities=50,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=1),
    )
    async with worker:
        print("READY", flush=True)
        await asyncio.Event().wait()


async def _resume(db: Path, session_id: str, call_id: str, answer: str) -> None:
    store = SQLiteSessionStore(db)
    try:
        result = await build_agent().run(
            session=store.session(session_id), tool_results={call_id: answer}
        )
        print("RESUMED", result.status, result.output_text, flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        beat = float(sys.argv[5]) if len(sys.argv) > 5 else 2.0
        asyncio.run(_serve(sys.argv[2], sys.argv[3], Path(sys.argv[4]), beat))
    else:
        asyncio.run(_resume(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]))
