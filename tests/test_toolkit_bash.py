"""``Bash``: output, exit codes, the output cap, timeouts and cancellation that kill the whole
process tree, the timeout clamp, the filtered environment and the working directory.

Tests that follow processes by their pid run with ``sandbox="off"`` (inside the sandbox's PID
namespace a pid means nothing outside); ``test_sandbox.py`` checks the sandbox itself."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent
from dive.errors import UserError
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit._bash import DEFAULT_ENV_ALLOW, Bash, BashInput
from dive.tools import ToolContext, ToolReturn, ToolStreamEvent
from dive.turns import CancelToken


def ctx(events: list[Any] | None = None) -> ToolContext:
    async def emit(event: Any) -> None:
        if events is not None:
            events.append(event)

    return ToolContext(tool_call_id="call_1", tool_name="Bash", turn_id="turn_1", emit=emit)


async def run(
    bash: Bash, command: str, *, limit: float | None = None, events: list[Any] | None = None
) -> ToolReturn:
    """One call; ``limit`` is the call's ``timeout`` argument."""
    value, error = bash.validate({"command": command, "timeout": limit})
    assert error is None, error
    async with asyncio.timeout(30):
        return await bash.call(value, ctx(events))


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


async def wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        await asyncio.sleep(0.05)
    return not alive(pid)


def pid_in(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


def resolved(path: Path) -> Path:
    return path.resolve()


async def read_pid(path: Path, within: float = 5.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pid = pid_in(path)
        if pid is not None:
            return pid
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was never written")


@pytest.fixture
def pids() -> Iterator[list[int]]:
    """Pids a test started; any still alive at the end are killed (no leftovers)."""
    started: list[int] = []
    yield started
    for pid in started:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# --- definition ----------------------------------------------------------------------------


def test_definition_carries_the_contract(tmp_path: Path) -> None:
    bash = Bash(tmp_path)
    d = bash.definition
    assert d.name == "Bash"
    assert dict(d.metadata) == {
        "dive.permission.argument": "command",
        "dive.permission.kind": "command",
        "dive.sandbox": "bwrap",
    }
    assert bash.annotations.destructive is True
    assert bash.annotations.open_world is True
    assert d.effect_type == "external_side_effect"
    assert set(d.input_schema["properties"]) == {"command", "timeout", "description"}  # type: ignore[arg-type]
    assert d.input_schema["required"] == ["command"]
    assert "120 s by default, at most 600 s" in d.description
    assert "30,000 characters" in d.description


def test_validate_and_preview(tmp_path: Path) -> None:
    bash = Bash(tmp_path)
    assert bash.validate({})[1] is not None
    assert bash.validate({"command": "ls", "timeout": 0})[1] is not None
    assert bash.validate({"command": "ls", "cwd": "/"})[1] is not None
    value, error = bash.validate({"command": "ls -la", "description": "List files"})
    assert error is None
    assert isinstance(value, BashInput)
    preview = bash.preview({"command": "ls -la", "description": "List files"})
    assert preview is not None
    assert (preview.summary, preview.details) == ("List files", "ls -la")


def test_constructor_refusals(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not an existing directory"):
        Bash(tmp_path / "missing")
    with pytest.raises(UserError, match="exceeds max_timeout"):
        Bash(tmp_path, default_timeout=700)
    with pytest.raises(UserError, match="looks like a secret"):
        Bash(tmp_path, env_allow=["GITHUB_TOKEN"])
    with pytest.raises(UserError, match="must be > 0"):
        Bash(tmp_path, output_cap=0)


# --- output and exit codes -----------------------------------------------------------------


async def test_merged_output_in_the_root(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path), "echo out; echo err >&2; pwd")
    assert result.is_error is False
    assert result.content == f"out\nerr\n{resolved(tmp_path)}\n"


async def test_cd_does_not_carry_over(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    bash = Bash(tmp_path)
    assert (await run(bash, "cd sub && pwd")).content == f"{resolved(tmp_path) / 'sub'}\n"
    assert (await run(bash, "pwd")).content == f"{resolved(tmp_path)}\n"


async def test_no_output_and_no_stdin(tmp_path: Path) -> None:
    bash = Bash(tmp_path)
    assert (await run(bash, "true")).content == "(no output)"
    # stdin is /dev/null: a command reading it ends at once instead of hanging
    assert (await run(bash, "cat; echo done")).content == "done\n"


async def test_non_zero_exit_is_an_error_with_its_code(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path), "echo partial; exit 3")
    assert result.is_error is True
    assert result.content == "<error>Exit code 3\npartial\n</error>"


async def test_killed_shell_reports_the_signal(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path), "kill -9 $$")
    assert result.is_error is True
    assert str(result.content).startswith("<error>Exit code 137 (killed by SIGKILL)")


async def test_huge_output_is_capped_with_a_note(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path), "yes | head -c 5000000")
    content = str(result.content)
    assert result.is_error is False
    assert "4,970,000 characters of output truncated" in content
    assert "capped at 30,000" in content
    head, _, rest = content.partition("\n\n[…")
    tail = rest.split("…]\n\n", 1)[1]
    assert len(head) + len(tail) == 30_000
    assert set(head.split("\n")) <= {"y", ""}
    assert tail.endswith("y\n")


async def test_cap_keeps_the_start_and_the_end(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path, output_cap=10), "printf 0123456789abcdef")
    assert result.content == (
        "01234\n\n[… 6 characters of output truncated here: the output was 16 characters "
        "and is capped at 10 …]\n\nbcdef"
    )


async def test_output_is_streamed_as_it_arrives(tmp_path: Path) -> None:
    events: list[Any] = []
    result = await run(Bash(tmp_path), "echo first; sleep 0.3; echo second", events=events)
    assert result.content == "first\nsecond\n"
    streamed = [e.text for e in events if isinstance(e, ToolStreamEvent)]
    assert "".join(streamed) == "first\nsecond\n"
    assert len(streamed) >= 2  # the first line came before the command ended


async def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path), r"printf 'a\xffb'")
    assert result.content == "a\ufffdb"


# --- timeouts and the process tree ---------------------------------------------------------


async def test_timeout_kills_the_whole_tree(tmp_path: Path, pids: list[int]) -> None:
    bash = Bash(tmp_path, sandbox="off")
    start = time.monotonic()
    result = await run(
        bash, "sleep 300 & echo $! > grandchild.pid; echo started; sleep 300", limit=1
    )
    elapsed = time.monotonic() - start
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    pids.append(grandchild)
    assert result.is_error is True
    assert str(result.content).startswith(
        "<error>Command timed out after 1 s; the command and every process it started were "
        "killed.\nstarted\n"
    )
    assert 1 <= elapsed < 10
    assert await wait_dead(grandchild, within=1.0), "the grandchild outlived the timeout"


async def test_timeout_escalates_to_sigkill(tmp_path: Path, pids: list[int]) -> None:
    bash = Bash(tmp_path, sandbox="off", kill_grace=0.5)
    command = "(trap '' TERM; exec sleep 300) & echo $! > stubborn.pid; sleep 300"
    result = await run(bash, command, limit=1)
    stubborn = int((tmp_path / "stubborn.pid").read_text())
    pids.append(stubborn)
    assert "timed out after 1 s" in str(result.content)
    assert await wait_dead(stubborn, within=1.0), "a process ignoring SIGTERM survived"


async def test_a_larger_timeout_is_clamped_to_the_maximum(tmp_path: Path) -> None:
    bash = Bash(tmp_path, default_timeout=1, max_timeout=1)
    start = time.monotonic()
    result = await run(bash, "sleep 300", limit=50)
    assert time.monotonic() - start < 10
    assert "timed out after 1 s (the requested 50 s is above the maximum of 1 s)" in str(
        result.content
    )


async def test_default_timeout_applies(tmp_path: Path) -> None:
    result = await run(Bash(tmp_path, default_timeout=0.5, max_timeout=5), "sleep 300")
    assert "timed out after 0.5 s;" in str(result.content)


async def test_background_holding_the_output_is_stopped(tmp_path: Path, pids: list[int]) -> None:
    result = await run(Bash(tmp_path, sandbox="off"), "sleep 300 & echo $! > bg.pid; echo done")
    pid = int((tmp_path / "bg.pid").read_text())
    pids.append(pid)
    assert result.is_error is False
    assert "done\n" in str(result.content)
    assert "background processes still holding the output" in str(result.content)
    assert await wait_dead(pid, within=1.0)


async def test_background_with_its_own_output_keeps_running(
    tmp_path: Path, pids: list[int]
) -> None:
    result = await run(Bash(tmp_path, sandbox="off"), "sleep 300 > /dev/null 2>&1 & echo $!")
    pid = int(str(result.content))
    pids.append(pid)
    assert alive(pid)


async def test_cancelling_the_call_kills_the_tree(tmp_path: Path, pids: list[int]) -> None:
    bash = Bash(tmp_path, sandbox="off")
    value, _ = bash.validate({"command": "sleep 300 & echo $! > gc.pid; sleep 300"})
    task = asyncio.create_task(bash.call(value, ctx()))
    grandchild = await read_pid(tmp_path / "gc.pid")
    pids.append(grandchild)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(grandchild), "the grandchild outlived the cancelled call"


async def test_cancelling_the_run_kills_the_tree(tmp_path: Path, pids: list[int]) -> None:
    bash = Bash(tmp_path, sandbox="off", requires_approval=False)
    token = CancelToken()
    model = ScriptedModel(
        [
            tool_use(call("Bash", {"command": "sleep 300 & echo $! > run.pid; sleep 300"})),
            text("never reached"),
        ]
    )
    agent = Agent(model=model, tools=[bash])
    task = asyncio.create_task(agent.run("go", cancel=token))
    grandchild = await read_pid(tmp_path / "run.pid")
    pids.append(grandchild)
    token.cancel()
    async with asyncio.timeout(10):
        result = await task
    assert result.status == "incomplete"
    assert result.outcome is not None
    assert result.outcome.reason == "canceled"
    assert await wait_dead(grandchild), "the grandchild outlived the cancelled run"


# --- environment ---------------------------------------------------------------------------


async def test_environment_is_filtered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("UNLISTED_SETTING", "hidden")
    monkeypatch.setenv("PROJECT_MODE", "visible")
    monkeypatch.setenv("LC_TESTCASE", "c-locale")
    bash = Bash(tmp_path, env_allow=["PROJECT_*"], env={"EXPLICIT_VALUE": "given"})
    result = await run(bash, "env")
    names = {line.split("=", 1)[0] for line in str(result.content).splitlines() if "=" in line}
    assert "secret" not in str(result.content)
    assert "hunter2" not in str(result.content)
    assert {"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"}.isdisjoint(
        names
    )
    assert "UNLISTED_SETTING" not in names
    assert {"PROJECT_MODE", "LC_TESTCASE", "EXPLICIT_VALUE", "PATH"} <= names
    assert "PATH" in DEFAULT_ENV_ALLOW


async def test_a_wildcard_allow_still_drops_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_KEY", "k-secret")
    monkeypatch.setenv("SERVICE_URL", "https://service.example")
    bash = Bash(tmp_path, env_allow=["SERVICE_*"])
    assert bash.environment().get("SERVICE_URL") == "https://service.example"
    assert "SERVICE_KEY" not in bash.environment()
    result = await run(bash, 'echo "[$SERVICE_KEY]"')
    assert result.content == "[]\n"


# --- job control and the kill: the session, off the event loop -----------------------------

_proc_opens: list[list[str]] = []  # while a test records: /proc paths opened on the loop's thread


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _proc_opens or event not in ("open", "os.listdir", "os.scandir"):
        return
    path = args[0] if args else None
    on_loop = threading.current_thread() is threading.main_thread()
    if on_loop and isinstance(path, str) and path.startswith("/proc"):
        _proc_opens[-1].append(path)


_audit_installed: list[bool] = []


@pytest.fixture
def loop_proc_reads() -> Iterator[list[str]]:
    """The ``/proc`` paths opened on the main thread (the event loop's) during the test."""
    if not _audit_installed:
        sys.addaudithook(_audit)  # cannot be removed: it records only while a test asks
        _audit_installed.append(True)
    seen: list[str] = []
    _proc_opens.append(seen)
    try:
        yield seen
    finally:
        _proc_opens.remove(seen)


JOB_CONTROL = (
    "set -m; sleep 300 & echo $! > job.pid; "
    "(trap '' TERM; exec sleep 300) & echo $! > stubborn.pid; "
    "echo started; wait"
)


async def test_timeout_kills_jobs_in_their_own_groups(tmp_path: Path, pids: list[int]) -> None:
    # `set -m` gives every background job its own process group: a group kill misses them
    bash = Bash(tmp_path, sandbox="off", kill_grace=0.5)
    result = await run(bash, JOB_CONTROL, limit=1)
    job, stubborn = (int((tmp_path / n).read_text()) for n in ("job.pid", "stubborn.pid"))
    pids.extend([job, stubborn])
    assert "timed out after 1 s" in str(result.content)
    assert await wait_dead(job, within=1.0), "a job in its own process group outlived the timeout"
    assert await wait_dead(stubborn, within=1.0), "a job ignoring SIGTERM outlived the timeout"


async def test_cancel_kills_jobs_in_their_own_groups(tmp_path: Path, pids: list[int]) -> None:
    bash = Bash(tmp_path, sandbox="off", kill_grace=0.5)
    value, _ = bash.validate({"command": JOB_CONTROL})
    task = asyncio.create_task(bash.call(value, ctx()))
    job = await read_pid(tmp_path / "job.pid")
    stubborn = await read_pid(tmp_path / "stubborn.pid")
    pids.extend([job, stubborn])
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(job), "a job in its own process group outlived the cancelled call"
    assert await wait_dead(stubborn), "a job ignoring SIGTERM outlived the cancelled call"


async def test_lingering_job_in_its_own_group_is_stopped(tmp_path: Path, pids: list[int]) -> None:
    result = await run(
        Bash(tmp_path, sandbox="off", kill_grace=0.5), "set -m; sleep 300 & echo $! > bg.pid"
    )
    pid = int((tmp_path / "bg.pid").read_text())
    pids.append(pid)
    assert "background processes still holding the output" in str(result.content)
    assert await wait_dead(pid, within=1.0)


async def test_the_kill_does_not_scan_proc_on_the_event_loop(
    tmp_path: Path, pids: list[int], loop_proc_reads: list[str]
) -> None:
    bash = Bash(tmp_path, sandbox="off", kill_grace=0.5)
    command = "(trap '' TERM; exec sleep 300) & echo $! > stubborn.pid; sleep 300"
    result = await run(bash, command, limit=0.5)
    pids.append(int((tmp_path / "stubborn.pid").read_text()))
    assert "timed out after 0.5 s" in str(result.content)
    assert loop_proc_reads == [], f"/proc read on the event loop: {loop_proc_reads[:3]}"
