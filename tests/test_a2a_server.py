"""``a2a_app`` driven by the A2A SDK's own client over HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError

from dive.a2a import a2a_app, agent_card
from dive.agent import Agent, IncompleteTurns
from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, Step, call, text, tool_use
from dive.tools import Suspend, tool
from tests._serve import child, serve
from tests.a2a_agents import banker
from tests.conftest import postgres_dsn

S = TaskState


def user(text: str, *, task_id: str = "", context_id: str = "", mid: str = "") -> Message:
    return Message(
        message_id=mid or f"m-{abs(hash(text)) % 10**8}",
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


async def events(client: Client, message: Message, **config: Any) -> list[StreamResponse]:
    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**config))
    return [e async for e in client.send_message(request)]


async def send(client: Client, message: Message, **config: Any) -> Task:
    [only] = await events(client, message, **config)
    assert only.HasField("task"), only  # every reply to message/send is a Task
    return only.task


def status_text(task: Task) -> str:
    return "\n".join(p.text for p in task.status.message.parts if p.HasField("text"))


def answer(task: Task) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts if p.HasField("text"))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as h:
        yield h


async def sdk_client(http: httpx.AsyncClient, url: str, *, streaming: bool) -> Client:
    config = ClientConfig(streaming=streaming, httpx_client=http)
    return await ClientFactory(config).create_from_url(url)


# --- the card -----------------------------------------------------------------------------


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_card_is_built_from_the_agent_and_its_url_from_the_request(
    http: httpx.AsyncClient,
) -> None:
    agent = Agent(
        model=ScriptedModel(), name="forecaster", description="Tells the weather.", tools=[weather]
    )
    async with serve(a2a_app(agent, store=MemorySessionStore())) as url:
        card = (await http.get(url + ".well-known/agent-card.json")).json()
        client = await sdk_client(http, url, streaming=True)
    assert card["name"] == "forecaster"
    assert card["description"] == "Tells the weather."
    assert [(s["id"], s["description"]) for s in card["skills"]] == [
        ("weather", "The weather in a city.")
    ]
    assert card["supportedInterfaces"][0]["url"] == url
    assert card["capabilities"]["streaming"] is True
    assert client is not None


async def test_a_given_card_is_served_with_the_request_url(http: httpx.AsyncClient) -> None:
    agent = Agent(model=ScriptedModel(), name="a", tools=[weather])
    from a2a.types import AgentSkill

    card = agent_card(agent, skills=[AgentSkill(id="s", name="S", description="d", tags=["x"])])
    async with serve(a2a_app(agent, store=MemorySessionStore(), card=card)) as url:
        served = (await http.get(url + ".well-known/agent-card.json")).json()
    assert [s["id"] for s in served["skills"]] == ["s"]
    assert served["supportedInterfaces"][0]["url"] == url


# --- send and stream ----------------------------------------------------------------------


async def test_send_answers_with_a_completed_task_whose_context_is_the_session(
    http: httpx.AsyncClient,
) -> None:
    store = MemorySessionStore()
    model = ScriptedModel([tool_use(call("weather", {"city": "Oslo"})), text("Sunny in Oslo.")])
    agent = Agent(model=model, tools=[weather])
    async with serve(a2a_app(agent, store=store)) as url:
        client = await sdk_client(http, url, streaming=False)
        task = await send(client, user("Weather in Oslo?", context_id="chat-1", mid="u1"))
        again = await client.get_task(GetTaskRequest(id=task.id))
    assert task.status.state == S.TASK_STATE_COMPLETED
    assert task.context_id == "chat-1"
    assert answer(task) == "Sunny in Oslo."
    assert next(m.message_id for m in task.history) == "u1"
    assert again == task
    [turn] = await store.turns("chat-1")  # the dive session id IS the context id
    assert turn.status == "completed"
    assert turn.messages[0].id == "u1"


async def test_a_second_message_in_the_context_continues_the_conversation(
    http: httpx.AsyncClient,
) -> None:
    model = ScriptedModel([text("Hi Ada."), text("You are Ada.")])
    store = MemorySessionStore()
    async with serve(a2a_app(Agent(model=model), store=store)) as url:
        client = await sdk_client(http, url, streaming=False)
        first = await send(client, user("I am Ada."))
        second = await send(client, user("Who am I?", context_id=first.context_id))
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert [m.text for m in model.requests[1].messages] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert len(await store.turns(first.context_id)) == 2


async def test_stream_sends_the_task_then_text_tool_calls_the_answer_and_the_end(
    http: httpx.AsyncClient,
) -> None:
    model = ScriptedModel([tool_use(call("weather", {"city": "Rome"})), text("Sunny in Rome.")])
    async with serve(
        a2a_app(Agent(model=model, tools=[weather]), store=MemorySessionStore())
    ) as url:
        client = await sdk_client(http, url, streaming=True)
        got = await events(client, user("Rome?"))
    assert got[0].HasField("task")
    assert got[0].task.status.state == S.TASK_STATE_WORKING
    kinds = [e.WhichOneof("payload") for e in got]
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update"
    updates = [e.status_update for e in got if e.HasField("status_update")]
    working = [u for u in updates if u.status.state == S.TASK_STATE_WORKING]
    texts = "".join(p.text for u in working for p in u.status.message.parts if p.HasField("text"))
    assert texts == "Sunny in Rome."
    data = [p for u in working for p in u.status.message.parts if p.HasField("data")]
    assert len(data) == 2  # the tool call and its result
    [artifact] = [e.artifact_update for e in got if e.HasField("artifact_update")]
    assert artifact.artifact.parts[0].text == "Sunny in Rome."
    assert artifact.last_chunk
    assert updates[-1].status.state == S.TASK_STATE_COMPLETED
    assert {e.task.id for e in got if e.HasField("task")} == {updates[-1].task_id}


async def test_legacy_json_rpc_method_names_are_served(http: httpx.AsyncClient) -> None:
    model = ScriptedModel([text("pong")])
    async with serve(a2a_app(Agent(model=model), store=MemorySessionStore())) as url:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    "kind": "message",
                    "messageId": "x1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "ping"}],
                }
            },
        }
        reply = (await http.post(url, json=body)).json()
    assert reply["result"]["kind"] == "task"  # a Task, never a bare Message
    assert reply["result"]["status"]["state"] == "completed"
    assert reply["result"]["artifacts"][0]["parts"][0]["text"] == "pong"


# --- input required, resume, cancel -------------------------------------------------------


async def test_input_required_then_the_answer_resumes_the_turn(http: httpx.AsyncClient) -> None:
    store = MemorySessionStore()
    async with serve(a2a_app(banker(), store=store)) as url:
        client = await sdk_client(http, url, streaming=True)
        got = await events(client, user("Close my account."))
        asked = await client.get_task(GetTaskRequest(id=got[-1].status_update.task_id))
        done = await events(client, user("savings-2", task_id=asked.id))
        final = await client.get_task(GetTaskRequest(id=asked.id))
    assert got[-1].status_update.status.state == S.TASK_STATE_INPUT_REQUIRED
    assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
    assert status_text(asked) == "Which account should I close?"
    assert done[-1].status_update.status.state == S.TASK_STATE_COMPLETED
    assert final.id == asked.id
    assert final.status.state == S.TASK_STATE_COMPLETED
    assert answer(final) == "Closed account savings-2."
    [turn] = await store.turns(asked.context_id)  # one turn: the resumed one
    [result] = [m.tool_result for m in turn.messages if m.tool_result is not None]
    assert result.text == "savings-2"  # the answer's text is the pending call's result


async def test_auth_required_and_an_approval_answered_yes(http: httpx.AsyncClient) -> None:
    @tool
    def login() -> Suspend:
        """Log in."""
        return Suspend("Sign in at https://example.test/login", reason="auth_required")

    @tool(requires_approval=True)
    def wire(amount: int) -> str:
        """Wire money."""
        return f"wired {amount}"

    model = ScriptedModel(
        [
            tool_use(call("login")),
            tool_use(call("wire", {"amount": 5})),
            text("Wired."),
        ]
    )
    store = MemorySessionStore()
    async with serve(a2a_app(Agent(model=model, tools=[login, wire]), store=store)) as url:
        client = await sdk_client(http, url, streaming=False)
        auth = await send(client, user("Pay Bob 5."))
        approval = await send(client, user("signed in", task_id=auth.id))
        done = await send(client, user("yes", task_id=auth.id))
    assert auth.status.state == S.TASK_STATE_AUTH_REQUIRED
    assert status_text(auth) == "Sign in at https://example.test/login"
    assert approval.status.state == S.TASK_STATE_INPUT_REQUIRED
    assert "wire" in status_text(approval)
    assert done.status.state == S.TASK_STATE_COMPLETED
    [turn] = await store.turns(auth.context_id)
    results = [m.tool_result.text for m in turn.messages if m.tool_result is not None]
    assert results == ["signed in", "wired 5"]


async def test_cancel_closes_a_suspended_task(http: httpx.AsyncClient) -> None:
    store = MemorySessionStore()
    async with serve(a2a_app(banker(), store=store)) as url:
        client = await sdk_client(http, url, streaming=False)
        asked = await send(client, user("Close my account."))
        canceled = await client.cancel_task(CancelTaskRequest(id=asked.id))
        with pytest.raises((A2AError, A2AClientError)):
            await send(client, user("too late", task_id=asked.id))
    assert canceled.status.state == S.TASK_STATE_CANCELED
    [turn] = await store.turns(asked.context_id)
    assert turn.status == "incomplete"
    assert turn.outcome is not None
    assert turn.outcome.reason == "canceled"


async def test_cancel_stops_a_running_task(http: httpx.AsyncClient) -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes a while."""
        started.set()
        await asyncio.sleep(30)
        return "done"

    model = ScriptedModel([tool_use(call("slow")), text("never")])
    store = MemorySessionStore()
    async with serve(a2a_app(Agent(model=model, tools=[slow]), store=store)) as url:
        client = await sdk_client(http, url, streaming=False)
        working = await send(client, user("Go."), return_immediately=True)
        await asyncio.wait_for(started.wait(), 10)
        listed = await client.list_tasks(ListTasksRequest(context_id=working.context_id))
        canceled = await client.cancel_task(CancelTaskRequest(id=working.id))
        final = await client.get_task(GetTaskRequest(id=working.id))
    assert working.status.state == S.TASK_STATE_WORKING
    assert [t.status.state for t in listed.tasks] == [S.TASK_STATE_WORKING]
    assert canceled.status.state == S.TASK_STATE_CANCELED
    assert final.status.state == S.TASK_STATE_CANCELED


async def test_a_failed_turn_keeps_its_output_and_says_why(http: httpx.AsyncClient) -> None:
    cut = Step(
        response=text("The first half of the answer"),
        cut_after=4,
        cut_error=ConnectionResetError("peer reset"),
    )
    agent = Agent(model=ScriptedModel([cut]), incomplete_turns=IncompleteTurns())
    async with serve(a2a_app(agent, store=MemorySessionStore())) as url:
        client = await sdk_client(http, url, streaming=False)
        task = await send(client, user("Answer."))
    assert task.status.state == S.TASK_STATE_FAILED
    assert status_text(task).startswith("incomplete (stream_interrupted)")
    [artifact] = task.artifacts
    assert artifact.name == "partial"
    assert "The first half" in artifact.parts[0].text


async def test_unknown_task_and_input_on_a_suspended_context_are_errors(
    http: httpx.AsyncClient,
) -> None:
    async with serve(a2a_app(banker(), store=MemorySessionStore())) as url:
        client = await sdk_client(http, url, streaming=False)
        with pytest.raises((A2AError, A2AClientError)):
            await client.get_task(GetTaskRequest(id="nope"))
        asked = await send(client, user("Close my account."))
        with pytest.raises((A2AError, A2AClientError), match="suspended"):
            await send(client, user("something else", context_id=asked.context_id))


async def test_subscribe_to_a_waiting_task_sends_it(http: httpx.AsyncClient) -> None:
    async with serve(a2a_app(banker(), store=MemorySessionStore())) as url:
        client = await sdk_client(http, url, streaming=True)
        got = await events(client, user("Close my account."))
        task_id = got[-1].status_update.task_id
        again = [e async for e in client.subscribe(SubscribeToTaskRequest(id=task_id))]
    assert [e.task.status.state for e in again] == [S.TASK_STATE_INPUT_REQUIRED]


# --- other processes, restarts ------------------------------------------------------------


def _continue_in_a_second_process(target: str) -> None:
    async def first(url: str) -> Task:
        async with httpx.AsyncClient(timeout=30) as h:
            client = await sdk_client(h, url, streaming=True)
            got = await events(client, user("Close my account."))
            return await client.get_task(GetTaskRequest(id=got[-1].status_update.task_id))

    async def second(url: str, task_id: str) -> tuple[Task, Task]:
        async with httpx.AsyncClient(timeout=30) as h:
            client = await sdk_client(h, url, streaming=False)
            before = await client.get_task(GetTaskRequest(id=task_id))
            return before, await send(client, user("checking-7", task_id=task_id))

    with child("a2a_agents", target) as url:
        asked = asyncio.run(first(url))
    # that server is gone; another process on the same store continues the task
    with child("a2a_agents", target) as url:
        before, done = asyncio.run(second(url, asked.id))
    assert asked.status.state == S.TASK_STATE_INPUT_REQUIRED
    assert before == asked  # task ids (and tasks) survive the restart
    assert done.id == asked.id
    assert done.context_id == asked.context_id
    assert done.status.state == S.TASK_STATE_COMPLETED
    assert answer(done) == "Closed account checking-7."


def test_a_second_process_continues_a_task_from_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "a2a.db"
    _continue_in_a_second_process(str(db))

    async def check() -> None:
        store = SQLiteSessionStore(db)
        try:
            [info] = await store.list()
            [turn] = await store.turns(info.id)
            assert turn.status == "completed"
        finally:
            await store.close()

    asyncio.run(check())


def test_a_second_process_continues_a_task_from_postgres() -> None:
    _continue_in_a_second_process(postgres_dsn())
