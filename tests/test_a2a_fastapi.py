"""Both apps mounted in FastAPI (examples/fastapi_service.py), driven over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest

from tests._serve import serve


async def test_mounted_apps_serve_a2a_and_agui(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIVE_SERVICE_DB", str(tmp_path / "service.db"))
    from examples import fastapi_service

    async with serve(fastapi_service.app) as url, httpx.AsyncClient(timeout=30) as http:
        assert (await http.get(url + "health")).json() == {"status": "ok"}
        card = (await http.get(url + "agents/shop/.well-known/agent-card.json")).json()
        # the card's URL is where it was fetched: behind the mount
        assert card["supportedInterfaces"][0]["url"] == url + "agents/shop/"
        config = ClientConfig(streaming=False, httpx_client=http)
        client = await ClientFactory(config).create_from_url(url + "agents/shop/")
        message = Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hello")])
        [reply] = [e async for e in client.send_message(SendMessageRequest(message=message))]
        body = {
            "threadId": "front-1",
            "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        }
        async with http.stream("POST", url + "agui/", json=body) as stream:
            lines = [
                json.loads(x[6:]) async for x in stream.aiter_lines() if x.startswith("data: ")
            ]
    assert reply.task.artifacts[0].parts[0].text == "You said: hello"
    assert lines[0]["type"] == "RUN_STARTED"
    assert lines[-1]["type"] == "RUN_FINISHED"
    await fastapi_service.store.close()
