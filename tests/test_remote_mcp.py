"""``ModelSettings(mcp_servers=...)``: the provider's remote-MCP feature, or a refusal.

Each entry is ``{"name", "url"}`` with optional ``authorization_token`` and ``allowed_tools``
(Anthropic's ``type: "url"`` and ``tool_configuration`` spellings are accepted too).

- Anthropic: the MCP connector — the beta ``mcp_servers`` parameter through the SDK's
  ``client.beta.messages``, one ``mcp_toolset`` tool per server (only the allowed tools
  enabled) and the ``mcp-client-2025-11-20`` beta. The connector's ``mcp_tool_use`` /
  ``mcp_tool_result`` blocks are kept and replayed verbatim.
- OpenAI Responses: one hosted ``mcp`` tool per server (``require_approval: "never"``: dive
  has no approval round trip for hosted calls).
- OpenAI Chat Completions (and the compatible presets): no remote MCP, so
  ``UnsupportedSettingError`` before any request.

A malformed entry is a ``UserError`` naming the field. The simulators check the shapes.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

import dive.testing.anthropic as anth
import dive.testing.openai as oai
from dive import Agent
from dive.errors import UnsupportedSettingError, UserError
from dive.llm import ModelRequest, ModelSettings, collect
from dive.messages import JSONValue, Message, UnknownBlock
from dive.providers import RetryPolicy
from dive.providers.anthropic import AnthropicModel
from dive.providers.openai import OpenAIChatModel, OpenAIResponsesModel

ONCE = RetryPolicy(max_retries=0)
DOCS: dict[str, JSONValue] = {
    "name": "docs",
    "url": "https://mcp.example.com/mcp",
    "authorization_token": "tok-123",
    "allowed_tools": ["search"],
}
WIKI: dict[str, JSONValue] = {"type": "url", "name": "wiki", "url": "https://wiki.example.com/sse"}
STREAMING = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "json"])


def _request(*servers: dict[str, Any]) -> ModelRequest:
    return ModelRequest(
        messages=(Message.user("Search the docs."),),
        settings=ModelSettings(mcp_servers=servers),  # type: ignore[arg-type]
    )


@pytest.fixture
def asim() -> Iterator[anth.AnthropicSimulator]:
    with anth.simulator(assert_consumed=True) as s:
        yield s


@pytest.fixture
def osim() -> Iterator[Any]:
    with oai.simulator(assert_consumed=True) as s:
        yield s


async def _send(model: Any, request: ModelRequest, streaming: bool) -> Any:
    try:
        return await (collect(model, request) if streaming else model.generate(request))
    finally:
        await model.aclose()


# --- Anthropic: the MCP connector ------------------------------------------------------------


@STREAMING
async def test_anthropic_sends_the_mcp_connector_through_the_beta_api(
    asim: anth.AnthropicSimulator, streaming: bool
) -> None:
    asim.add("Found it.")
    model = AnthropicModel("claude-sonnet-4-6", base_url=asim.url, api_key="k", retry=ONCE)
    response = await _send(model, _request(DOCS, WIKI), streaming)
    assert response.text == "Found it."
    (sent,) = asim.message_requests
    assert sent.path.split("?")[0] == "/v1/messages"
    assert "mcp-client-2025-11-20" in sent.headers["anthropic-beta"].split(",")
    assert sent["mcp_servers"] == [
        {
            "type": "url",
            "url": "https://mcp.example.com/mcp",
            "name": "docs",
            "authorization_token": "tok-123",
        },
        {"type": "url", "url": "https://wiki.example.com/sse", "name": "wiki"},
    ]
    toolsets = [t for t in sent["tools"] if t.get("type") == "mcp_toolset"]
    assert [{k: v for k, v in t.items() if k != "cache_control"} for t in toolsets] == [
        {
            "type": "mcp_toolset",
            "mcp_server_name": "docs",
            "default_config": {"enabled": False},
            "configs": {"search": {"enabled": True}},
        },
        {"type": "mcp_toolset", "mcp_server_name": "wiki"},
    ]


MCP_USE = {
    "type": "mcp_tool_use",
    "id": "mcptoolu_01",
    "name": "search",
    "server_name": "docs",
    "input": {"q": "release notes"},
}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_01",
    "is_error": False,
    "content": [{"type": "text", "text": "v2 is out"}],
}


@STREAMING
async def test_anthropic_keeps_the_connectors_blocks_and_replays_them(
    asim: anth.AnthropicSimulator, streaming: bool
) -> None:
    asim.add(
        anth.reply(blocks=[MCP_USE, MCP_RESULT, anth.text_block("v2 is out.")]),
        "Anything else?",
    )
    model = AnthropicModel(
        "claude-sonnet-4-6", base_url=asim.url, api_key="k", retry=ONCE, streaming=streaming
    )
    agent = Agent(model=model, model_settings=ModelSettings(mcp_servers=(DOCS,)))
    first = await agent.run("What is new?")
    assert first.output_text == "v2 is out."
    kept = [b for m in first.new_messages() for b in m.content if isinstance(b, UnknownBlock)]
    assert [b.block_type for b in kept] == ["mcp_tool_use", "mcp_tool_result"]
    await agent.run("And?", history=first.all_messages())
    await model.aclose()
    replayed = asim.message_requests[1]["messages"][1]["content"]
    assert [b["type"] for b in replayed] == ["mcp_tool_use", "mcp_tool_result", "text"]
    assert replayed[0]["input"] == {"q": "release notes"}
    sent_back = [{k: v for k, v in c.items() if v is not None} for c in replayed[1]["content"]]
    assert sent_back == MCP_RESULT["content"]


@pytest.mark.parametrize(
    ("body", "headers", "error"),
    [
        (
            {"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]},
            {},
            "mcp_servers: Extra inputs are not permitted",
        ),
        (
            {"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]},
            {"anthropic-beta": "mcp-client-2025-11-20"},
            "MCP server 'x' is not referenced by any mcp_toolset",
        ),
        (
            {"tools": [{"type": "mcp_toolset", "mcp_server_name": "nope"}]},
            {"anthropic-beta": "mcp-client-2025-11-20"},
            "mcp_toolset references unknown MCP server 'nope'",
        ),
        (
            {"mcp_servers": [{"type": "url", "name": "x"}]},
            {"anthropic-beta": "mcp-client-2025-11-20"},
            "mcp_servers.0.url: Field required",
        ),
    ],
)
def test_the_anthropic_simulator_checks_the_connector(
    asim: anth.AnthropicSimulator, body: dict[str, Any], headers: dict[str, str], error: str
) -> None:
    payload = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        **body,
    }
    status, text = _post(f"{asim.url}/v1/messages", payload, {"x-api-key": "k", **headers})
    assert status == 400
    assert error in text


# --- OpenAI ----------------------------------------------------------------------------------


@STREAMING
async def test_openai_responses_sends_one_hosted_mcp_tool_per_server(
    osim: Any, streaming: bool
) -> None:
    osim.add(oai.text("Found it."))
    model = OpenAIResponsesModel(
        "gpt-5", base_url=osim.url, api_key="k", retry=ONCE, streaming=streaming
    )
    response = await _send(model, _request(DOCS, WIKI), streaming)
    assert response.text == "Found it."
    (sent,) = osim.responses_requests
    assert sent["tools"] == [
        {
            "type": "mcp",
            "server_label": "docs",
            "server_url": "https://mcp.example.com/mcp",
            "require_approval": "never",
            "authorization": "tok-123",
            "allowed_tools": ["search"],
        },
        {
            "type": "mcp",
            "server_label": "wiki",
            "server_url": "https://wiki.example.com/sse",
            "require_approval": "never",
        },
    ]


def test_the_openai_simulator_checks_the_mcp_tool(osim: Any) -> None:
    payload = {
        "model": "gpt-5",
        "input": "hi",
        "tools": [{"type": "mcp", "server_url": "https://x"}],
    }
    status, text = _post(f"{osim.url}/responses", payload, {"authorization": "Bearer k"})
    assert status == 400
    assert "tools[0].server_label" in text


async def test_chat_completions_refuses_mcp_servers_before_any_request(osim: Any) -> None:
    model = OpenAIChatModel("gpt-4.1", base_url=osim.url, api_key="k", retry=ONCE)
    with pytest.raises(UnsupportedSettingError, match=r"Chat Completions.*OpenAIResponsesModel"):
        await _send(model, _request(DOCS), streaming=True)
    with pytest.raises(UnsupportedSettingError, match="mcp_servers"):
        Agent(model=model, model_settings=ModelSettings(mcp_servers=(DOCS,)))
    assert osim.requests == []


# --- what every provider checks --------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ({"url": "https://x"}, r"mcp_servers\[0\]\.name: field required"),
        ({"name": "x"}, r"mcp_servers\[0\]\.url: field required"),
        ({"name": "x", "url": "ftp://x"}, r"mcp_servers\[0\]\.url: .*http"),
        ({"name": "x", "url": "https://x", "token": "t"}, r"mcp_servers\[0\]\.token: unknown"),
        ({"name": "x", "url": "https://x", "allowed_tools": "search"}, r"allowed_tools"),
        ({"name": "x", "url": "https://x", "type": "stdio"}, r"mcp_servers\[0\]\.type"),
    ],
)
async def test_a_malformed_entry_is_a_user_error_naming_the_field(
    asim: anth.AnthropicSimulator, entry: dict[str, Any], error: str
) -> None:
    anthropic_model = AnthropicModel("claude-sonnet-4-6", base_url=asim.url, api_key="k")
    responses = OpenAIResponsesModel("gpt-5", base_url=asim.url, api_key="k")
    for model in (anthropic_model, responses):
        with pytest.raises(UserError, match=error):
            await _send(model, _request(entry), streaming=False)
    assert asim.requests == []


async def test_two_servers_may_not_share_a_name(asim: anth.AnthropicSimulator) -> None:
    model = AnthropicModel("claude-sonnet-4-6", base_url=asim.url, api_key="k")
    with pytest.raises(UserError, match=r"mcp_servers\[1\]\.name: 'docs' is used twice"):
        await _send(model, _request(DOCS, DOCS), streaming=False)


def _post(url: str, payload: dict[str, Any], headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
