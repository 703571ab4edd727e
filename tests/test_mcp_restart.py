"""An MCP elicitation survives a process restart: one process suspends the turn on the
server's question and exits; another, with a new SQLite store instance and a new connection,
resumes it with the answer, and the call is sent again with it (the effect happens once)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._mcp import HTTPFixture

ROOT = Path(__file__).resolve().parent.parent


def _child(*args: str, effects: Path) -> str:
    env = {**os.environ, "MCP_FIXTURE_EFFECTS": str(effects)}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.mcp_child", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _line(out: str, tag: str) -> dict[str, Any]:
    [line] = [x for x in out.splitlines() if x.startswith(tag + " ")]
    return json.loads(line[len(tag) + 1 :])


@pytest.fixture(scope="module")
def http_effects(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HTTPFixture, Path]]:
    effects = tmp_path_factory.mktemp("http") / "effects"
    fx = HTTPFixture(MCP_FIXTURE_EFFECTS=str(effects)).start()
    yield fx, effects
    fx.stop()


@pytest.mark.parametrize("kind", ["http", "stdio", "stdio-legacy"])
def test_an_elicitation_is_answered_from_another_process(
    kind: str, tmp_path: Path, http_effects: tuple[HTTPFixture, Path]
) -> None:
    db = tmp_path / "sessions.db"
    if kind == "http":
        fx, effects = http_effects
        spec = f"http:{fx.url}"
    else:
        effects, spec = tmp_path / "effects", kind
    started = _line(_child(str(db), spec, "start", effects=effects), "SUSPENDED")
    assert started["status"] == "suspended"
    assert (started["reason"], started["prompt"]) == ("input_required", "Delete /x?")
    assert started["metadata"]["message"] == "Delete /x?"
    assert started["metadata"]["requested_schema"]["properties"]["ok"]["type"] == "boolean"
    assert not effects.exists() or "deleted /x" not in effects.read_text()

    resumed = _line(_child(str(db), spec, "resume", effects=effects), "RESUMED")
    assert resumed["status"] == "completed"
    assert resumed["answered"] == {"d": ["deleted /x", False]}
    assert resumed["output"] == "done"
    assert effects.read_text().count("deleted /x") == 1


def test_a_server_that_lost_its_key_refuses_the_answer_plainly(tmp_path: Path) -> None:
    db, effects = tmp_path / "sessions.db", tmp_path / "effects"
    _child(str(db), "stdio-nokey", "start", effects=effects)
    resumed = _line(_child(str(db), "stdio-nokey", "resume", effects=effects), "RESUMED")
    text, is_error = resumed["answered"]["d"]
    assert is_error
    assert 'MCP server "fx" no longer accepts the answer for "delete"' in text
    assert not effects.exists() or "deleted" not in effects.read_text()
