"""``--mcp-config``: MCP servers from a config file give ``dive`` their tools (offline)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests._cli import PROMPT, ROOT, dive, quit_chat, result_of, send, spawn_chat

SERVER = ROOT / "examples" / "mcp_files_server.py"


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """home, the workspace, and an MCP config starting the notes server over stdio."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    config = work / "mcp.json"
    server = {"command": sys.executable, "args": [str(SERVER)], "env": {"NOTES_DIR": "notes"}}
    server["cwd"] = str(work)
    config.write_text(json.dumps({"mcpServers": {"notes": server}}))
    return home, work, config


def test_run_calls_mcp_tools(
    places: tuple[Path, Path, Path],
) -> None:
    home, work, config = places
    ask = 'call mcp__notes__write_note with name=todo text="buy milk"'
    proc = dive("run", "-o", "json", "--mcp-config", str(config), ask, cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert [c["name"] for c in data["tool_calls"]] == ["mcp__notes__write_note"]
    assert "wrote todo" in data["output"]
    assert (work / "notes" / "todo.txt").read_text() == "buy milk"

    listed = dive(
        "run", "--mcp-config", str(config), "call mcp__notes__list_notes", cwd=work, home=home
    )
    assert listed.returncode == 0, listed.stderr
    assert "todo" in listed.stdout


def test_the_config_can_come_from_the_settings_file(places: tuple[Path, Path, Path]) -> None:
    home, work, config = places
    (work / ".dive").mkdir()
    (work / ".dive" / "settings.json").write_text(json.dumps({"mcpConfig": config.name}))
    proc = dive("run", "call mcp__notes__list_notes", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "mcp__notes__list_notes" in proc.stdout


@pytest.mark.parametrize(
    ("config", "code", "says"),
    [
        ("{not json", 2, "is not JSON"),
        ('{"servers": {}}', 2, '"mcpServers"'),
        ('{"mcpServers": {"x": {"command": "dive-no-such-program-here"}}}', 1, "x"),
        ('{"mcpServers": {"x": {"url": "http://127.0.0.1:9/mcp"}}}', 1, "x"),
    ],
    ids=["not-json", "no-servers", "no-program", "unreachable"],
)
def test_a_bad_config_or_server_is_one_line_and_no_traceback(
    tmp_path: Path, config: str, code: int, says: str
) -> None:
    home, work = tmp_path / "home", tmp_path
    path = tmp_path / "mcp.json"
    path.write_text(config)
    proc = dive("run", "--mcp-config", str(path), "hi", cwd=work, home=home, timeout=60)
    assert proc.returncode == code, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert says in lines[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_chat_lists_mcp_tools_and_answers_an_elicitation_in_place(
    places: tuple[Path, Path, Path],
) -> None:
    home, work, config = places
    (work / "notes").mkdir()
    (work / "notes" / "todo.txt").write_text("buy milk")
    child = spawn_chat(home, work, "--mcp-config", str(config))
    send(child, "/tools")
    child.expect("MCP server notes:")
    child.expect("mcp__notes__delete_note")
    child.expect(PROMPT)

    send(child, "call mcp__notes__delete_note with name=todo")
    child.expect("Delete the note 'todo'")  # the server's question, asked in place
    child.expect(r"ok \(boolean\)")
    send(child, "y")
    child.expect("deleted todo")
    child.expect(PROMPT)
    assert quit_chat(child) == 0
    assert not (work / "notes" / "todo.txt").exists()
