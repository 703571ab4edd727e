"""``RemoteAgent`` against a dive A2A server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from dive.a2a import RemoteAgent, a2a_app
from dive.agent import Agent, AgentEvent
from dive.llm import ModelRequest, ModelResponse
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import ToolStreamEvent
from tests._serve import serve
from tests.a2a_agents import banker


def _last_result(request: Any) -> str:
    result = request.messages[-1].tool_result
    assert result is not None
    return str(result.text)


def echo_agent() -> Agent[Any, Any]:
    def reply(request: ModelRequest) -> ModelResponse:
        return text(f"echo: {request.messages[-1].text}")

    return Agent(model=ScriptedModel([reply] * 10), name="Echo Bot", description="Repeats you.")


async def test_send_stream_and_continue_a_remote_task_directly() -> None:
    store = MemorySessionStore()
    async with serve(a2a_app(banker(), store=store)) as url:
        remote = RemoteAgent(url)
        asked = await remote.send("Close my account.")
        streamed = [e async for e in remote.stream("savings-1", task_id=asked.id)]
        again = await remote.get_task(asked.id)
        other = await remote.send("Close another one.", context_id=asked.context_id)
        canceled = await remote.cancel(other.id)
    assert asked.state == "input-required"
    assert asked.needs_input
    assert asked.status_text == "Which account should I close?"
    assert streamed[-1].task.state == "completed"
    assert streamed[-1].task.text == "Closed account savings-1."
    assert any(e.type == "text" for e in streamed)
    assert again.state == "completed"
    assert again.text == "Closed account savings-1."
    assert other.context_id == asked.context_id
    assert canceled.state == "canceled"
    assert len(await store.turns(asked.context_id)) == 2


async def test_connect_names_the_tool_after_the_card() -> None:
    async with serve(a2a_app(echo_agent(), store=MemorySessionStore())) as url:
        remote = await RemoteAgent.connect(url)
    assert remote.name == "echo_bot"
    assert "Repeats you." in remote.definition.description


async def test_a_remote_agent_as_a_tool_answers_and_streams() -> None:
    events: list[AgentEvent] = []
    async with serve(a2a_app(echo_agent(), store=MemorySessionStore())) as url:
        remote = RemoteAgent(url, name="echo")
        model = ScriptedModel([tool_use(call("echo", {"message": "hello"})), text("It said hi.")])
        caller = Agent(model=model, tools=[remote])
        result = await caller.run("Ask echo.", on_event=events.append)
    assert result.status == "completed"
    [tool_result] = [m.tool_result for m in result.turn.messages if m.tool_result is not None]
    assert tool_result.text == "echo: hello"
    assert "".join(e.text for e in events if isinstance(e, ToolStreamEvent)) == "echo: hello"


async def test_calls_from_one_session_share_the_remote_context() -> None:
    remote_store = MemorySessionStore()
    async with serve(a2a_app(echo_agent(), store=remote_store)) as url:
        remote = RemoteAgent(url, name="echo")
        model = ScriptedModel(
            [
                tool_use(call("echo", {"message": "one"})),
                text("ok"),
                tool_use(call("echo", {"message": "two"})),
                text("ok"),
            ]
        )
        store = MemorySessionStore()
        caller = Agent(model=model, tools=[remote], session=store.session("caller-1"))
        await caller.run("first")
        await caller.run("second")
    [info] = await remote_store.list()
    assert len(await remote_store.turns(info.id)) == 2


async def test_input_required_suspends_the_caller_and_its_resume_answers_the_remote() -> None:
    remote_store = MemorySessionStore()
    async with serve(a2a_app(banker(), store=remote_store)) as url:
        caller_store = MemorySessionStore()

        def caller(remote: RemoteAgent, model: ScriptedModel) -> Agent[Any, Any]:
            return Agent(model=model, extensions=[remote], session=caller_store.session("desk"))

        model = ScriptedModel([tool_use(call("bank", {"message": "Close my account."}))])
        suspended = await caller(RemoteAgent(url, name="bank"), model).run("Close it.")
        assert suspended.status == "suspended"
        assert suspended.turn.suspension is not None
        [pending] = suspended.turn.suspension.pending_tool_calls
        assert pending.prompt == "Which account should I close?"
        assert pending.reason == "input_required"

        # a fresh RemoteAgent (as in another process) finds the remote task in the session
        later = ScriptedModel([lambda r: text(f"Bank says: {_last_result(r)}")])
        done = await caller(RemoteAgent(url, name="bank"), later).run(
            tool_results={pending.id: "savings-9"}
        )
    assert done.status == "completed"
    assert done.output == "Bank says: Closed account savings-9."
    [info] = await remote_store.list()
    [remote_turn] = await remote_store.turns(info.id)
    assert remote_turn.status == "completed"


async def test_a_remote_failure_is_an_error_result() -> None:
    def broken(_: Any) -> Any:
        raise RuntimeError("model down")

    failing = Agent(model=ScriptedModel([broken]), name="flaky")
    async with serve(a2a_app(failing, store=MemorySessionStore())) as url:
        remote = RemoteAgent(url, name="flaky", streaming=False)
        model = ScriptedModel([tool_use(call("flaky", {"message": "hi"})), text("It failed.")])
        result = await Agent(model=model, tools=[remote]).run("Try.")
    [tool_result] = [m.tool_result for m in result.turn.messages if m.tool_result is not None]
    assert tool_result.is_error
    assert "failed" in tool_result.text


async def test_a_remote_that_asks_again_names_its_task_for_the_model() -> None:
    def asker(request: ModelRequest) -> ModelResponse:
        answers = [m.tool_result.text for m in request.messages if m.tool_result is not None]
        if len(answers) < 2:
            return tool_use(call("ask_account", {"reason": "close" if not answers else "check"}))
        return text(f"Done with {' and '.join(answers)}.")

    from tests.a2a_agents import ask_account

    remote_agent = Agent(model=ScriptedModel([asker] * 5), tools=[ask_account])
    async with serve(a2a_app(remote_agent, store=MemorySessionStore())) as url:
        remote = RemoteAgent(url, name="bank")
        store = MemorySessionStore()

        def relay(request: ModelRequest) -> ModelResponse:
            said = _last_result(request)
            task_id = said.split("task_id='")[1].split("'")[0]
            return tool_use(call("bank", {"message": "again-2", "task_id": task_id}))

        model = ScriptedModel(
            [tool_use(call("bank", {"message": "Close it."})), relay, text("finished")]
        )
        caller = Agent(model=model, extensions=[remote], session=store.session("c"))
        first = await caller.run("Go.")
        assert first.turn.suspension is not None
        [pending] = first.turn.suspension.pending_tool_calls
        done = await caller.run(tool_results={pending.id: "first-1"})
    results = [m.tool_result.text for m in done.turn.messages if m.tool_result is not None]
    assert results[0].startswith("The remote agent asks: Which account should I check?")
    assert results[1] == "Done with first-1 and again-2."
    assert done.status == "completed"
