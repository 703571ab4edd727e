"""``RunResult.pending_tool_calls``: the calls a suspended result waits for, without ``dir()``.

Before this accessor, the ids to answer were only at ``result.turn.suspension.pending_tool_calls``
(``suspension`` being None on every other result).
"""

from __future__ import annotations

from dive import Agent, Suspend, ToolApproval, tool
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use


@tool(requires_approval=True, effect_type="write")
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def ask(question: str) -> Suspend:
    """Ask the user."""
    return Suspend(question, reason="input_required")


async def test_a_suspended_result_lists_its_pending_calls_in_call_order() -> None:
    model = ScriptedModel(
        [
            tool_use(
                call("delete_file", {"path": "a.txt"}, id="c1"),
                call("ask", {"question": "Which folder?"}, id="c2"),
            ),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[delete_file, ask], session=MemorySessionStore().session("s"))
    result = await agent.run("clean up")
    assert result.status == "suspended"
    pending = result.pending_tool_calls
    assert [(p.id, p.name, p.reason) for p in pending] == [
        ("c1", "delete_file", "approval_required"),
        ("c2", "ask", "input_required"),
    ]
    assert result.turn.suspension is not None
    assert pending == result.turn.suspension.pending_tool_calls
    assert pending[1].prompt == "Which folder?"

    answers = {"c1": ToolApproval(approved=True), "c2": "tmp"}
    done = await agent.run(tool_results=answers)
    assert done.status == "completed"
    assert done.pending_tool_calls == ()


async def test_a_completed_result_has_no_pending_calls() -> None:
    result = await Agent(model=ScriptedModel(["hi"])).run("hello")
    assert result.pending_tool_calls == ()
