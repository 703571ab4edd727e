"""The offline examples run to completion (``make demo`` covers quickstart)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
    ],
)
def test_example_runs(name: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # offline
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
    if name == "a2a_pair.py":  # the remote question suspended the caller; its resume answered
        assert "the travel desk asks 'Which date should I book the train for?'" in proc.stdout
        assert "on Friday 14 March." in proc.stdout
    if name == "coding_agent.py":  # it fixed the project: the tests fail before, pass after
        assert "tests pass before? False" in proc.stdout
        assert "tests pass after? True" in proc.stdout
    if name == "mcp_agent.py":  # suspended on the server's question, resumed in a new process
        assert "suspended (input_required): Delete the note 'todo'?" in proc.stdout
        assert "resumed: mcp__notes__delete_note -> deleted todo" in proc.stdout
        assert "notes left: none" in proc.stdout
