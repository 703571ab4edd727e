"""The offline examples run to completion; the quickstart (``make demo``) twice."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _offline_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}


@pytest.mark.parametrize(
    "name",
    [
        "typed_output.py",
        "history_json.py",
        "review_bot.py",
        "eval_report.py",
        "otel_console.py",
        "coding_agent.py",
        "mcp_agent.py",
        "research_team.py",
        "a2a_pair.py",
        "claude_on_clouds.py",
        "viewer_inbox.py",
    ],
)
def test_example_runs(name: str, tmp_path: Path) -> None:
    env = _offline_env()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    if name == "review_bot.py":  # the run's usage and trace come with the verdict
        assert re.search(r"^\d+ rounds, \d+ tokens, \$\d", proc.stdout, re.MULTILINE)
    if name == "a2a_pair.py":  # the remote question suspended the caller; its resume answered
        assert "the travel desk asks 'Which date should I book the train for?'" in proc.stdout
        assert "on Friday 14 March." in proc.stdout
    if name == "claude_on_clouds.py":  # both platforms' URL shapes, the retry fed back
        assert "vertex (gcp.vertex_ai): It is sunny in Paris." in proc.stdout
        assert ":streamRawPredict" in proc.stdout
        assert "the model was told: No station in 'Lutetia'" in proc.stdout
        assert "/invoke-with-response-stream with MCP servers ['docs']" in proc.stdout
    if name == "coding_agent.py":  # it fixed the project: the tests fail before, pass after
        assert "tests pass before? False" in proc.stdout
        assert "tests pass after? True" in proc.stdout
    if name == "mcp_agent.py":  # suspended on the server's question, resumed in a new process
        assert "suspended (input_required): Delete the note 'todo'?" in proc.stdout
        assert "resumed: mcp__notes__delete_note -> deleted todo" in proc.stdout
        assert "notes left: none" in proc.stdout
    if name == "viewer_inbox.py":  # the inbox listed the wait; the owner applied the decision
        assert "turn: suspended" in proc.stdout
        assert "inbox lists the wait: True" in proc.stdout
        assert "after the owner applied it: completed - v2 is live." in proc.stdout


def test_the_quickstart_talks_to_the_simulator_and_continues_its_session(tmp_path: Path) -> None:
    """``make demo`` offline: the Anthropic simulator through the SDK, priced, and a second
    run that continues the first run's conversation from the SQLite session."""
    outputs: list[str] = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, str(ROOT / "examples" / "quickstart.py")],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
            env=_offline_env(),
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    first, second = outputs
    assert "Anthropic simulator" in first
    assert "through the official SDK" in first
    assert "→ list_examples({})" in first
    assert "→ calculate(" in first
    assert "turn record: turn_" in first
    assert "completed" in first
    assert "session quickstart: 1 turn(s)" in first
    for out in outputs:
        usage = next(line for line in out.splitlines() if line.startswith("usage: "))
        assert "$" in usage
        assert "cost unknown" not in usage
    assert "session quickstart: 2 turn(s)" in second
    assert "What is in the examples folder" in second  # it remembers the first run
    assert (tmp_path / ".dive-example" / "quickstart.db").is_file()
