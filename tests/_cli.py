"""Running the ``dive`` command in a subprocess (or a pty), offline, in a scratch home."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect

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


PROMPT = "›"
TIMEOUT = 60


def spawn_chat(
    home: Path, work: Path, *args: str, term: str = "xterm-256color"
) -> pexpect.spawn[str]:
    env = cli_env(home, TERM=term, PROMPT_TOOLKIT_NO_CPR="1")
    env.pop("NO_COLOR")
    child: pexpect.spawn[str] = pexpect.spawn(
        DIVE[0],
        [*DIVE[1:], "chat", *args],
        cwd=str(work),
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    # Keys sent before prompt-toolkit takes the terminal (raw mode) may be flushed: give it a
    # moment after each prompt appears (this bounds nothing; it only avoids lost keys).
    child.delaybeforesend = 0.3
    child.expect(PROMPT)
    return child


def send(child: pexpect.spawn[str], line: str) -> None:
    child.send(line + "\r")  # Enter is a carriage return in raw mode


def quit_chat(child: pexpect.spawn[str]) -> int:
    send(child, "/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


CONSOLE = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)


def console_blocks(page: Path) -> list[tuple[int, str]]:
    """The ``console`` blocks of a Markdown page, with the line each starts at."""
    text = page.read_text()
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in CONSOLE.finditer(text)]


def console_commands(block: str) -> list[tuple[str, list[str]]]:
    """Each ``$ command`` of a console block and the output lines shown after it.

    A shown line is expected in what the command prints (stderr and stdout); an ellipsis ends
    the part that is checked.
    """
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif line.strip():
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line.split("…")[0].strip())
    return out


def run_console_block(block: str, tmp_path: Path, *, where: str) -> None:
    """Run a block's commands in order with bash, offline, in a fresh home and workspace."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = cli_env(home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for command, shown in console_commands(block):
        proc = subprocess.run(
            ["bash", "-c", command],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        printed = proc.stderr + proc.stdout
        assert "Traceback" not in printed, (where, command, printed)
        for expected in shown:
            assert expected in printed, (where, command, expected, printed)
