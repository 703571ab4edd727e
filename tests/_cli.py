"""Running the ``dive`` command in a subprocess (or a pty), offline, in a scratch home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DIVE = [sys.executable, "-m", "dive"]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an offline run: no provider credentials, no DIVE_ settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.endswith(("_API_KEY", "_BASE_URL")) or k.startswith("DIVE_"))
    }
    env.update(HOME=str(home), NO_COLOR="1", COLUMNS="120", DIVE_MAX_RETRIES="0")
    env.update(extra)
    return env


def dive(
    *args: str,
    cwd: Path,
    home: Path,
    input: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 90,
) -> subprocess.CompletedProcess[str]:
    """``python -m dive ARGS`` (stdin closed unless ``input`` is given)."""
    return subprocess.run(
        [*DIVE, *args],
        cwd=cwd,
        env=cli_env(home, **(env or {})),
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def result_of(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The one JSON object ``--output-format json`` prints (and nothing else on stdout)."""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    data: dict[str, Any] = json.loads(lines[0])
    return data
