"""A child process for the MCP elicitation restart tests (not a test module).

Usage: python -m tests.mcp_child <sqlite-file> <server> <mode>

- server: ``http:<url>`` (a server that outlives this process), ``stdio`` (the fixture server
  as this process's child, sealing its state with the shared key), ``stdio-legacy`` (2025-era
  connection: the older elicitation request) or ``stdio-nokey`` (a per-process key).
- mode ``start``: a turn whose call asks for confirmation; prints ``SUSPENDED {...}``.
- mode ``resume``: a new store instance, a new server connection; answers the question and
  lets the model finish; prints ``RESUMED {...}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from dive import Agent
from dive.mcp import MCPServer, MCPServerHTTP
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel, call, text, tool_use
from tests._mcp import KEY, stdio_server


def make_server(spec: str) -> MCPServer:
    if spec.startswith("http:"):
        return MCPServerHTTP("fx", spec[len("http:") :])
    env = {"MCP_FIXTURE_EFFECTS": os.environ["MCP_FIXTURE_EFFECTS"]}
    if spec != "stdio-nokey":
        env["MCP_FIXTURE_KEY"] = KEY
    return stdio_server(protocol="legacy" if spec == "stdio-legacy" else "auto", env=env)


async def main(path: str, spec: str, mode: str) -> None:
    store = SQLiteSessionStore(path)
    server = make_server(spec)
    try:
        session = store.session("s")
        if mode == "start":
            model = ScriptedModel([tool_use(call("mcp__fx__delete", {"path": "/x"}, id="d"))])
            agent = Agent(model=model, toolsets=[server], session=session)
            result = await agent.run("delete /x")
            assert result.turn.suspension is not None, (result.status, result.error)
            [p] = result.turn.suspension.pending_tool_calls
            out = {"status": result.status, "reason": p.reason, "prompt": p.prompt}
            out["metadata"] = json.loads(json.dumps(dict(p.metadata), default=list))
            print("SUSPENDED " + json.dumps(out), flush=True)
        else:
            model = ScriptedModel([text("done")])
            agent = Agent(model=model, toolsets=[server], session=session)
            result = await agent.run(tool_results={"d": {"ok": True}})
            [request] = model.requests
            answered = {
                r.tool_call_id: [r.text, r.is_error]
                for m in request.messages
                if (r := m.tool_result) is not None
            }
            out = {"status": result.status, "answered": answered, "output": result.output_text}
            print("RESUMED " + json.dumps(out), flush=True)
    finally:
        await server.aclose()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
