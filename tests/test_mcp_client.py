"""dive.mcp against real servers built with the SDK's ``MCPServer`` (tests/mcp_fixture_server.py),
over stdio and streamable HTTP on 127.0.0.1: listing, calls, results, list changes, a killed
server, elicitation as a suspension, permissions, prompts and resources."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import pytest
from mcp import Client, types

from dive import Agent
from dive.agent import AgentEvent, HookContext, Hooks, RunResult
from dive.mcp import MCPConnectionError, MCPServer, MCPServerStdio, MCPTool
from dive.messages import Base64Source, ImageBlock, TextBlock, ToolResult
from dive.permissions import PermissionConfig, permission_policy
from dive.sessions import MemorySessionStore
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use
from dive.tools import Suspend, ToolProgressEvent, ToolReturn
from tests._mcp import HTTPFixture, stdio_server

KINDS = ["stdio", "http"]


@pytest.fixture(scope="module")
def http_fixture() -> Iterator[HTTPFixture]:
    fx = HTTPFixture().start()
    yield fx
    fx.stop()


def make_server(kind: str, http: HTTPFixture, *, protocol: str = "auto") -> MCPServer:
    if kind == "stdio":
        return stdio_server(protocol=protocol)
    return http.server(protocol=protocol)


@pytest.fixture
async def server(
    request: pytest.FixtureRequest, http_fixture: HTTPFixture
) -> AsyncIterator[MCPServer]:
    kind, _, mode = str(request.param).partition("-")
    srv = make_server(kind, http_fixture, protocol="legacy" if mode == "legacy" else "auto")
    async with srv:
        yield srv


def by_name(tools: Any) -> dict[str, MCPTool]:
    return {t.name: t for t in tools}


def results(run: RunResult[Any]) -> dict[str, ToolResult]:
    return {r.tool_call_id: r for m in run.turn.messages if (r := m.tool_result) is not None}


def agent_on(srv: MCPServer, script: list[ScriptItem], **kw: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    return Agent(model=model, toolsets=[srv], **kw), model


# --- listing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("server", KINDS, indirect=True)
async def test_tools_keep_their_schemas_and_map_annotations_to_governance(
    server: MCPServer,
) -> None:
    tools = by_name(await server.tools())
    assert {"mcp__fx__echo", "mcp__fx__add", "mcp__fx__delete", "mcp__fx__grow"} <= set(tools)
    async with Client(
        types_target(server), cache=None
    ) as raw:  # what the SDK's own client sees, for comparison
        listed = {t.name: t for t in (await raw.list_tools()).tools}
    for tool in tools.values():
        d = tool.definition
        assert d.origin == "mcp:fx"
        assert dict(d.metadata) == {"mcp_server": "fx", "mcp_tool": tool.mcp_name}
        assert _thaw(d.input_schema) == listed[tool.mcp_name].input_schema  # lossless
    echo, add, fetch, fail = (tools[f"mcp__fx__{n}"] for n in ("echo", "add", "fetch", "fail"))
    assert (echo.definition.effect_type, echo.definition.idempotent) == ("read_only", True)
    assert echo.annotations.read_only is True
    assert add.definition.effect_type == "write"  # destructiveHint
    assert add.annotations.open_world is False
    assert fetch.definition.effect_type == "external_side_effect"  # openWorldHint
    assert fail.definition.effect_type is None  # nothing said: unknown stays unknown
    assert fail.annotations.read_only is None
    assert fail.annotations.destructive is None
    assert "Echo the text back." in echo.definition.description


def types_target(srv: MCPServer) -> Any:
    return srv._target()  # pyright: ignore[reportPrivateUsage]


def _thaw(value: Any) -> Any:
    if hasattr(value, "items"):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_thaw(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


# --- calls and results ------------------------------------------------------------------------


@pytest.mark.parametrize("server", KINDS, indirect=True)
async def test_an_agent_calls_tools_and_sees_text_structured_error_and_image_results(
    server: MCPServer,
) -> None:
    agent, model = agent_on(
        server,
        [
            tool_use(
                call("mcp__fx__echo", {"text": "hello"}, id="e"),
                call("mcp__fx__weather", {"city": "Oslo"}, id="w"),
                call("mcp__fx__fail", {"reason": "no disk"}, id="f"),
                call("mcp__fx__picture", {}, id="p"),
                call("mcp__fx__add", {"a": "x", "b": 2}, id="bad"),
            ),
            text("done"),
        ],
    )
    run = await agent.run("go")
    assert run.status == "completed", run.error
    got = results(run)
    assert got["e"].text == "hello"
    assert not got["e"].is_error
    assert got["w"].structured == {"city": "Oslo", "celsius": 21.5}  # structuredContent kept
    assert got["f"].is_error
    assert got["f"].text == "failed: no disk"
    [image] = got["p"].content
    assert isinstance(image, ImageBlock)
    source = image.source
    assert isinstance(source, Base64Source)
    assert source.media_type == "image/png"
    assert base64.b64decode(source.data).startswith(b"\x89PNG")
    assert got["bad"].is_error  # dive checks the schema before sending
    sent = {t.name for t in model.requests[0].tools}
    assert "mcp__fx__echo" in sent


async def test_audio_embedded_resources_and_links_become_blocks() -> None:
    async with stdio_server() as srv:
        out = await srv.call_tool("media", {})
    assert isinstance(out, ToolReturn)
    assert not out.is_error
    audio, resource, link = out.content
    assert isinstance(audio, TextBlock)
    assert "audio (audio/wav, 12 bytes)" in audio.text
    assert resource == TextBlock(text="[resource file:///notes.txt]\nthe notes")
    assert isinstance(link, TextBlock)
    assert link.text.startswith("[resource link file:///big.csv big.csv")


async def test_progress_notifications_become_tool_progress_events() -> None:
    async with stdio_server() as srv:
        agent, _ = agent_on(
            srv, [tool_use(call("mcp__fx__slow", {"steps": 3}, id="s")), text("ok")]
        )
        events: list[AgentEvent] = []
        run = await agent.run("go", on_event=events.append)
    assert results(run)["s"].text == "3 steps done"
    progress = [e for e in events if isinstance(e, ToolProgressEvent)]
    assert [p.display for p in progress] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert dict(progress[-1].metadata) == {"progress": 3.0, "total": 3.0, "server": "fx"}
    assert {p.tool_call_id for p in progress} == {"s"}


@pytest.mark.parametrize("server", ["stdio", "stdio-legacy", "http", "http-legacy"], indirect=True)
async def test_a_list_change_refreshes_the_tools_before_the_next_model_call(
    server: MCPServer,
) -> None:
    tool_name = f"made_{os.getpid()}_{id(server) % 10_000}"

    async def notice_arrived(ctx: HookContext) -> None:
        if ctx.call is None or ctx.call.id != "g":
            return
        for _ in range(500):  # over HTTP the notice comes on another stream, maybe later
            if server.tools_changed:
                return
            await asyncio.sleep(0.01)

    agent, model = agent_on(
        server,
        [
            tool_use(call("mcp__fx__grow", {"name": tool_name}, id="g")),
            tool_use(call(f"mcp__fx__{tool_name}", {}, id="n")),
            text("done"),
        ],
        hooks=Hooks(post_tool_use=[notice_arrived]),
    )
    await asyncio.sleep(0.1)  # the list-changed subscription is acknowledged
    run = await agent.run("grow")
    assert run.status == "completed", run.error
    first, second, _ = ({t.name for t in r.tools} for r in model.requests)
    assert f"mcp__fx__{tool_name}" not in first
    assert f"mcp__fx__{tool_name}" in second  # listed again before the next model call
    assert results(run)["n"].text == f"I am {tool_name}"


# --- a killed server --------------------------------------------------------------------------


async def _pid(srv: MCPServer) -> int:
    out = await srv.call_tool("pid", {})
    assert isinstance(out, ToolReturn), out
    return cast("dict[str, int]", out.structured)["result"]


async def test_a_stdio_server_killed_during_a_call_is_reported_and_the_next_call_reconnects(
    tmp_path: Any,
) -> None:
    effects = tmp_path / "effects"
    srv = stdio_server(env={"MCP_FIXTURE_EFFECTS": str(effects)})
    async with srv:
        pid = await _pid(srv)
        agent, _ = agent_on(
            srv,
            [
                tool_use(call("mcp__fx__hang", {"seconds": 60}, id="h")),
                tool_use(call("mcp__fx__echo", {"text": "back"}, id="e")),
                text("done"),
            ],
        )

        async def kill_when_started() -> None:
            while not effects.exists():  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.02)
            os.kill(pid, signal.SIGKILL)

        killer = asyncio.ensure_future(kill_when_started())
        run = await agent.run("go")
        await killer
        got = results(run)
        assert got["h"].is_error
        assert 'MCP server "fx" was lost during the call to "hang"' in got["h"].text
        assert "did not send it again" in got["h"].text
        assert got["e"].text == "back"  # the next call reconnected: a new process
        assert await _pid(srv) != pid
        assert effects.read_text().count("hang started") == 1  # never replayed


async def test_a_stdio_server_killed_while_idle_is_restarted_before_it_is_used() -> None:
    async with stdio_server() as srv:
        pid = await _pid(srv)
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.3)  # the client sees the pipe close
        agent, _ = agent_on(
            srv, [tool_use(call("mcp__fx__echo", {"text": "hi"}, id="e")), text("ok")]
        )
        run = await agent.run("go")
        assert results(run)["e"].text == "hi"  # nothing was sent to the dead process
        assert await _pid(srv) != pid


async def test_an_http_server_killed_during_a_call_is_reported_and_reconnected_when_back(
    tmp_path: Any,
) -> None:
    effects = tmp_path / "effects"
    fx = HTTPFixture(MCP_FIXTURE_EFFECTS=str(effects)).start()
    try:
        srv = fx.server()
        async with srv:
            before = await _pid(srv)
            call_task = asyncio.ensure_future(srv.call_tool("hang", {"seconds": 60}))
            while not effects.exists():  # noqa: ASYNC110 - another process writes it
                await asyncio.sleep(0.02)
            fx.kill()
            out = await asyncio.wait_for(call_task, 30)
            assert isinstance(out, ToolReturn)
            assert out.is_error
            assert 'MCP server "fx" was lost during the call to "hang"' in str(out.content)
            fx.start()  # the same port again
            assert await _pid(srv) != before
            assert effects.read_text().count("hang started") == 1
    finally:
        fx.stop()


# --- elicitation ------------------------------------------------------------------------------


@pytest.mark.parametrize("server", ["stdio", "stdio-legacy", "http", "http-legacy"], indirect=True)
async def test_an_elicitation_suspends_the_turn_and_the_answer_is_sent_with_the_call_again(
    server: MCPServer,
) -> None:
    store = MemorySessionStore()
    agent, model = agent_on(
        server,
        [tool_use(call("mcp__fx__delete", {"path": "/tmp/x"}, id="d")), text("deleted it")],
        session=store.session("s"),
    )
    first = await agent.run("delete /tmp/x")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert (pending.id, pending.reason, pending.prompt) == ("d", "input_required", "Delete /tmp/x?")
    meta = dict(pending.metadata)
    assert meta["type"] == "mcp_elicitation"
    assert meta["server"] == "fx"
    assert meta["message"] == "Delete /tmp/x?"
    assert _thaw(meta["requested_schema"])["properties"]["ok"]["type"] == "boolean"
    assert len(model.requests) == 1

    done = await agent.run(tool_results={"d": {"ok": True}})
    assert done.status == "completed", done.error
    assert results(done)["d"].text == "deleted /tmp/x"
    assert len(model.requests) == 2


async def test_a_declined_elicitation_is_sent_as_declined() -> None:
    async with stdio_server() as srv:
        asked = await srv.call_tool("delete", {"path": "/a"})
        assert isinstance(asked, Suspend)
        from dive.tools import ResumedCall, ToolContext

        ctx = ToolContext(tool_call_id="c", tool_name="delete", turn_id="t")
        ctx.resumed = ResumedCall(answer={"action": "decline"}, metadata=asked.metadata)
        out = await srv.call_tool("delete", {"path": "/a"}, ctx)
    assert isinstance(out, ToolReturn)
    assert out.content == [TextBlock(text="kept /a (decline)")]


async def test_a_url_elicitation_suspends_with_auth_required() -> None:
    async with stdio_server() as srv:
        agent, _ = agent_on(
            srv,
            [tool_use(call("mcp__fx__connect_account", {}, id="c")), text("connected")],
            session=MemorySessionStore().session("s"),
        )
        first = await agent.run("connect")
        assert first.turn.suspension is not None
        [pending] = first.turn.suspension.pending_tool_calls
        assert pending.reason == "auth_required"
        assert dict(pending.metadata)["url"] == "https://example.test/login"
        done = await agent.run(tool_results={"c": {"action": "accept"}})
    assert results(done)["c"].text == "connected"


# --- governance, prompts, resources, lifecycle --------------------------------------------


async def test_permission_rules_name_mcp_tools() -> None:
    async with stdio_server() as srv:
        agent, _ = agent_on(
            srv,
            [
                tool_use(
                    call("mcp__fx__echo", {"text": "a"}, id="e"),
                    call("mcp__fx__add", {"a": 1, "b": 2}, id="a"),
                ),
                text("ok"),
            ],
            approval_policy=permission_policy(
                PermissionConfig.from_rules(deny=["mcp__fx__add"], allow=["mcp__fx__*"])
            ),
        )
        run = await agent.run("go")
    got = results(run)
    assert got["e"].text == "a"
    assert got["a"].is_error
    assert "add" in got["a"].text
    records = {r.id: r for r in run.turn.tool_calls}
    assert records["e"].origin == "mcp:fx"
    assert records["e"].effect == "read_only"


async def test_prompts_and_resources_are_listed_and_read() -> None:
    async with stdio_server() as srv:
        prompts = await srv.list_prompts()
        assert [p.name for p in prompts] == ["review"]
        rendered = await srv.get_prompt("review", {"code": "x = 1"})
        assert "Review this: x = 1" in str(rendered.messages[0].content)
        resources = await srv.list_resources()
        assert [str(r.uri) for r in resources] == ["file:///notes.txt"]
        read = await srv.read_resource("file:///notes.txt")
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert contents.text == "the notes"


async def test_a_server_that_cannot_start_ends_the_turn_with_an_error_naming_it() -> None:
    srv = MCPServerStdio("broken", "/nonexistent/mcp-server", timeout=5)
    agent, _ = agent_on(srv, [text("never")])
    run = await agent.run("go")
    assert run.status == "incomplete"
    assert 'could not connect to MCP server "broken" (/nonexistent/mcp-server)' in str(run.error)
    with pytest.raises(MCPConnectionError):
        await srv.tools()


async def test_the_connection_is_lazy_and_closes_with_aclose() -> None:
    srv = stdio_server()
    assert not srv.connected
    tools = await srv.tools()  # the first use connects
    assert srv.connected
    assert tools
    pid = await _pid(srv)
    await srv.aclose()
    assert not srv.connected
    await asyncio.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert await _pid(srv) != pid  # used again: a new process


def test_each_run_sync_opens_its_own_connection() -> None:
    srv = stdio_server()
    pids: list[str] = []
    for _ in range(2):  # each run_sync is its own event loop; the first loop's process ends
        model = ScriptedModel([tool_use(call("mcp__fx__pid", {}, id="p")), text("ok")])
        run = Agent(model=model, toolsets=[srv]).run_sync("go")
        assert run.status == "completed", run.error
        pids.append(results(run)["p"].text)
    assert pids[0] != pids[1]
    with pytest.raises(ProcessLookupError):
        os.kill(int(pids[0]), 0)
