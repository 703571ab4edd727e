"""Terminal calls in a parallel batch: held until the others finish, never past a suspension.

A terminal call is announced and run after the other calls of its batch. When one of those
suspends the turn, the terminal call has not started (nor been checkpointed as starting); the
resume runs it, its result is checked like any other (structured output included), and a
terminal success ends the resumed turn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel

from dive import Agent, Suspend, tool
from dive.agent import Durability, ToolApproval
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use

ran: list[str] = []


@tool
async def ask(question: str) -> Suspend:
    """Ask a person."""
    ran.append("ask")
    return Suspend(question)


@tool(terminal=True)
async def finish(value: int) -> str:
    """Finish."""
    ran.append(f"finish:{value}")
    return f"finished with {value}"


def setup_function() -> None:
    ran.clear()


async def test_a_terminal_call_does_not_run_past_a_siblings_suspension() -> None:
    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(
                call("ask", {"question": "which?"}, id="a1"), call("finish", {"value": 1}, id="f1")
            )
        ]
    )
    agent = Agent(model=model, tools=[ask, finish], session=store.session("s"))
    first = await agent.run("go")
    assert first.status == "suspended"
    assert ran == ["ask"]  # finish did not run while the turn waits
    states = {r.id: r.state for r in first.turn.tool_calls}
    assert states["f1"] == "not_started"
    done = await agent.run(tool_results={"a1": "the blue one"})
    assert ran == ["ask", "finish:1"]
    assert done.status == "completed"
    assert len(model.requests) == 1  # the terminal success ended the resumed turn
    assert done.output == "finished with 1"
    assert done.output_text == "finished with 1"


async def test_a_terminal_call_is_not_checkpointed_as_started_before_it_runs() -> None:
    store = MemorySessionStore()
    session = store.session("s")
    seen: dict[str, str] = {}

    @tool
    async def slow() -> str:
        """Work a while."""
        await asyncio.sleep(0.01)
        [turn] = await session.turns()
        seen.update({r.id: r.state for r in turn.tool_calls})
        return "slow done"

    model = ScriptedModel(
        [tool_use(call("slow", {}, id="s1"), call("finish", {"value": 2}, id="f1"))]
    )
    agent = Agent(
        model=model,
        tools=[slow, finish],
        session=session,
        durability=Durability(checkpoint_steps=True),
    )
    result = await agent.run("go")
    assert result.status == "completed"
    assert seen["s1"] == "running"
    assert seen["f1"] == "not_started"  # a crash now would not leave it 'unknown'


class Verdict(BaseModel):
    ok: bool


async def test_a_submission_run_on_resume_is_checked_as_output() -> None:
    store = MemorySessionStore()
    model = ScriptedModel(
        [
            tool_use(
                call("ask", {"question": "sure?"}, id="a1"),
                call("submit_result", {"ok": True}, id="r1"),
            )
        ]
    )
    agent = Agent(model=model, tools=[ask], output_type=Verdict, session=store.session("s"))
    first = await agent.run("judge")
    assert first.status == "suspended"
    done = await agent.run(tool_results={"a1": "yes"})
    assert done.status == "completed"
    assert done.output == Verdict(ok=True)
    assert len(model.requests) == 1


async def test_an_approved_terminal_call_ends_the_resumed_turn() -> None:
    @tool(terminal=True, requires_approval=True)
    async def publish(text: str) -> str:
        """Publish."""
        ran.append("publish")
        return "published"

    model = ScriptedModel([tool_use(call("publish", {"text": "t"}, id="p1")), text("extra")])
    agent = Agent(model=model, tools=[publish], session=MemorySessionStore().session("s"))
    assert (await agent.run("go")).status == "suspended"
    done = await agent.run(tool_results={"p1": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert ran == ["publish"]
    assert len(model.requests) == 1
    assert done.output == "published"


async def test_a_tool_that_runs_last_but_is_not_terminal_lets_the_turn_go_on() -> None:
    from dive.tools import FunctionTool

    async def review(note: str) -> str:
        ran.append("review")
        return f"reviewed {note}"

    last: Any = FunctionTool(review, name="review")
    last.runs_last = True

    @tool
    async def work(n: int) -> str:
        """Work."""
        await asyncio.sleep(0.01)
        ran.append(f"work:{n}")
        return "worked"

    model = ScriptedModel(
        [
            tool_use(
                call("review", {"note": "x"}, id="r1"),
                call("work", {"n": 1}, id="w1"),
                call("work", {"n": 2}, id="w2"),
            ),
            text("all done"),
        ]
    )
    result = await Agent(model=model, tools=[last, work]).run("go")
    assert ran[-1] == "review"  # after both parallel work calls, though the model listed it first
    assert result.output == "all done"  # not terminal: the loop went on
    assert len(model.requests) == 2


async def test_a_terminal_call_answered_on_resume_ends_the_turn() -> None:
    @tool(terminal=True)
    async def confirm(what: str) -> Suspend:
        """Confirm with a person, then finish."""
        return Suspend(f"confirm {what}?")

    model = ScriptedModel([tool_use(call("confirm", {"what": "x"}, id="c1")), text("more")])
    agent = Agent(model=model, tools=[confirm], session=MemorySessionStore().session("s"))
    assert (await agent.run("go")).status == "suspended"
    done = await agent.run(tool_results={"c1": "confirmed"})
    assert done.status == "completed"
    assert len(model.requests) == 1  # the supplied success ended the turn like a run one
    assert done.output == "confirmed"


async def test_a_terminal_result_goes_through_the_output_validators() -> None:
    from dive import ModelRetry

    seen: list[str] = []

    def no_secrets(value: str) -> str:
        seen.append(value)
        if "secret" in value:
            raise ModelRetry("Do not reveal the secret.")
        return value

    model = ScriptedModel(
        [
            tool_use(call("finish", {"value": 42}, id="f1")),
            text("I cannot share that."),
        ]
    )

    @tool(terminal=True)
    async def finish(value: int) -> str:
        """Finish."""
        return f"the secret is {value}"

    agent = Agent(model=model, tools=[finish], output_validators=[no_secrets])
    result = await agent.run("tell me")
    assert seen[0] == "the secret is 42"
    assert result.output == "I cannot share that."
    assert len(model.requests) == 2
