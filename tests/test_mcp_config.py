"""``dive.mcp.load_config``: the ``mcpServers`` JSON format, ``${VAR}`` / ``${VAR:-default}``
expansion, and refusals that say what is wrong (the CLI's ``--mcp-config`` calls it)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from dive.mcp import MCPConfigError, MCPServerHTTP, MCPServerSSE, MCPServerStdio, load_config
from dive.mcp._names import dive_tool_name
from tests._mcp import FIXTURE


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_the_common_format_with_expansion(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", "secret")
    monkeypatch.delenv("T", raising=False)
    monkeypatch.setenv("EMPTY", "")
    path = write(
        tmp_path,
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "server-fs", "${K}"], "env": {"K": "${K}"}},
                "api": {
                    "type": "http",
                    "url": "https://x/mcp",
                    "headers": {"Authorization": "Bearer ${T:-dev}", "X": "${EMPTY:-fallback}"},
                },
                "old": {"type": "sse", "url": "https://y/sse", "timeout": 5},
                "bare": {"url": "https://z/mcp"},
            }
        },
    )
    servers = load_config(path)
    assert list(servers) == ["fs", "api", "old", "bare"]
    fs, api, old, bare = servers.values()
    assert isinstance(fs, MCPServerStdio)
    assert (fs.command, fs.args, fs.env) == ("npx", ("-y", "server-fs", "secret"), {"K": "secret"})
    assert isinstance(api, MCPServerHTTP)
    assert api.headers == {"Authorization": "Bearer dev", "X": "fallback"}
    assert isinstance(old, MCPServerSSE)
    assert old.timeout == 5.0
    assert isinstance(bare, MCPServerHTTP)
    assert bare.url == "https://z/mcp"
    assert not any(s.connected for s in servers.values())


async def test_a_loaded_stdio_server_connects(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"mcpServers": {"fx": {"command": sys.executable, "args": [str(FIXTURE), "stdio"]}}},
    )
    async with load_config(path)["fx"] as srv:
        names = {t.name for t in await srv.tools()}
    assert "mcp__fx__echo" in names


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("{not json", "is not JSON"),
        ({"servers": {}}, '"mcpServers"'),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "args must be a list of strings"),
        ({"mcpServers": {"a": {"type": "ws", "url": "u"}}}, "not one of stdio, http, sse"),
        ({"mcpServers": {"a": {}}}, "needs a 'command'"),
        ({"mcpServers": {"a": {"command": "x", "enviroment": {}}}}, "enviroment"),
        (
            {"mcpServers": {"a": {"command": "x", "env": {"A": "${NOPE_NOT_SET}"}}}},
            "${NOPE_NOT_SET} is not set",
        ),
        ({"mcpServers": {"a__b": {"command": "x"}}}, "MCP server name 'a__b' is invalid"),
        ({"mcpServers": {"a": {"url": "u", "timeout": -1}}}, "timeout must be a number"),
    ],
)
def test_a_bad_file_is_refused_with_the_reason(tmp_path: Path, data: Any, message: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(MCPConfigError) as err:
        load_config(path)
    assert message in str(err.value)
    assert err.value.source == str(path)


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(MCPConfigError, match="does not exist"):
        load_config(tmp_path / "nope.json")


def test_tool_names_fit_dive_and_stay_distinct() -> None:
    assert dive_tool_name("gh", "create_issue") == "mcp__gh__create_issue"
    dotted, slashed = dive_tool_name("gh", "a.b"), dive_tool_name("gh", "a/b")
    assert dotted.startswith("mcp__gh__a_b_")
    assert dotted != slashed
    long = dive_tool_name("server", "x" * 80)
    assert len(long) == 64
    assert long != dive_tool_name("server", "x" * 81)


def test_the_docs_page_first_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "mcp.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    server = root / "examples" / "mcp_files_server.py"
    code = code.replace('"examples/mcp_files_server.py"', repr(str(server)))
    monkeypatch.chdir(tmp_path)  # the server writes its notes here
    exec(compile(code, "docs/mcp.md", "exec"), {"__name__": "docs_example"})
    printed = capsys.readouterr().out
    for shown in re.findall(r"# → (.+)$", code, re.MULTILINE):
        assert shown in printed
