"""The Bash sandbox: it holds when the permission rules are fooled.

Each attack runs through an ``Agent`` whose permission policy is in ``bypass`` mode (every
command the rules do not deny runs, as if the parser had been fooled), and each is checked
where it would land: on the file system, on a socket listening on 127.0.0.1, in the host's
process table, in the command's output. A positive control shows each check can fail.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent
from dive.errors import UserError
from dive.permissions import PermissionConfig, audit_log, permission_policy
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit import Bash, Sandbox
from dive.toolkit._sandbox import sandbox_problem
from dive.tools import ToolContext, ToolReturn

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the bubblewrap sandbox is Linux only"
)


async def run(bash: Bash, command: str, limit: float | None = None) -> ToolReturn:
    value, error = bash.validate({"command": command, "timeout": limit})
    assert error is None, error
    async with asyncio.timeout(60):
        return await bash.call(value, ToolContext(tool_call_id="c", tool_name="Bash", turn_id="t"))


async def bypassed(bash: Bash, *commands: str, workspace: Path) -> list[str]:
    """Run ``commands`` through an agent whose permissions are in bypass mode; the results."""
    model = ScriptedModel(
        [
            tool_use(*(call("Bash", {"command": c}, id=f"c{i}") for i, c in enumerate(commands))),
            text("done"),
        ]
    )
    config = PermissionConfig.from_rules(mode="bypass", workspace=workspace)
    agent = Agent(model=model, tools=[bash], approval_policy=permission_policy(config))
    async with asyncio.timeout(120):
        result = await agent.run("go")
    decisions = [(e.call_id, e.decision) for e in audit_log(result.turn)]
    assert decisions == [(f"c{i}", "allow") for i in range(len(commands))]
    found = {r.tool_call_id: r.text for m in result.new_messages() if (r := m.tool_result)}
    return [found[f"c{i}"] for i in range(len(commands))]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def _exists(*paths: str | Path) -> list[str]:
    return [str(p) for p in paths if os.path.lexists(p)]


def _write(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


def _text(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


async def _eventually(predicate: Callable[[], bool], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


def test_the_sandbox_runs_here() -> None:
    """The suite needs bubblewrap (make test installs it): say so plainly if it cannot run."""
    assert asyncio.run(sandbox_problem(Sandbox())) is None


# --- files ------------------------------------------------------------------------------------


async def test_writes_outside_the_workspace_fail(workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    home = Path.home()
    marker = f"dive-sandbox-{secrets.token_hex(4)}"
    outputs = await bypassed(
        Bash(workspace, requires_approval=False),
        "touch ../PWNED; echo x > ../PWNED2",
        f"echo x > {outside}/a; echo x > link/b",
        f"mkdir -p {home}/{marker}; touch {home}/{marker}",
        f"cp /etc/hostname /etc/{marker} || true; echo > /usr/{marker}",
        "$(printf 'tou%s' ch) ../PWNED3",
        f"python3 -c \"open('{tmp_path}/PWNED4', 'w').write('x')\"",
        workspace=workspace,
    )
    assert [n for n in _names(tmp_path) if n.startswith("PWNED")] == []
    assert _names(outside) == []
    assert _exists(home / marker, f"/etc/{marker}", f"/usr/{marker}") == []
    assert "Read-only file system" in "".join(outputs)
    assert _names(workspace) == [".dive", "link"]


async def test_the_workspace_is_writable_and_tmp_is_private(workspace: Path) -> None:
    host_tmp = Path("/tmp") / f"dive-host-{secrets.token_hex(4)}"
    inner = f"/tmp/dive-inner-{secrets.token_hex(4)}"
    _write(host_tmp, "host file")
    try:
        bash = Bash(workspace, requires_approval=False)
        result = await run(bash, f"echo made > made.txt; echo t > {inner}; ls {host_tmp} || true")
        assert _text(workspace / "made.txt") == "made\n"
        assert "No such file" in str(result.content)
        assert _exists(inner) == []
    finally:
        _remove(host_tmp)


async def test_writes_into_the_settings_directory_fail(workspace: Path) -> None:
    settings = workspace / ".dive" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"deny": ["Bash(rm:*)"]}}')
    before = settings.read_text()
    outputs = await bypassed(
        Bash(workspace, requires_approval=False),
        'echo \'{"permissions": {"defaultMode": "bypassPermissions"}}\' > '
        ".dive/settings.local.json",
        "mv .dive .dive-old; mkdir -p .dive; echo '{}' > .dive/settings.json",
        "cd .dive && ln -s /tmp x; cd .. ; find .dive -delete",
        workspace=workspace,
    )
    assert settings.read_text() == before
    assert sorted(p.name for p in (workspace / ".dive").iterdir()) == ["settings.local.json"]
    assert not (workspace / ".dive-old").exists()
    assert "Read-only file system" in "".join(outputs) or "busy" in "".join(outputs)


async def test_a_missing_settings_directory_cannot_be_created(workspace: Path) -> None:
    await run(Bash(workspace), "mkdir -p .dive 2>/dev/null; echo '{}' > .dive/settings.json")
    assert list((workspace / ".dive").iterdir()) == []


async def test_git_hooks_stay_read_only(workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    result = await run(
        Bash(workspace), "echo 'touch /tmp/p' > .git/hooks/pre-commit; echo x >> .git/config"
    )
    assert "Read-only file system" in str(result.content)
    assert list((workspace / ".git" / "hooks").iterdir()) == []
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


async def test_credential_stores_in_the_home_directory_are_hidden(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-77")
    (home / ".netrc").write_text("machine x password NETRC-88")
    monkeypatch.setenv("HOME", str(home))
    result = await run(Bash(workspace), "cat ~/.ssh/id_ed25519 ~/.netrc; ls -a ~/.ssh")
    assert "PRIVATE-KEY-77" not in str(result.content)
    assert "NETRC-88" not in str(result.content)


# --- the agent's process and environment ------------------------------------------------------


def _hidden_environment(bash: Bash) -> list[str]:
    """``NAME=value`` entries of this process's start-up environment a command must not see."""
    passed = bash.environment()
    entries = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace").split("\0")
    return [
        e
        for e in entries
        if "=" in e and e.split("=", 1)[0] not in passed and len(e.split("=", 1)[1]) >= 8
    ]


async def test_the_parent_environment_cannot_be_read(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: ``cat /proc/$PPID/environ`` printed the provider key and the database URL."""
    key = f"sk-ant-{secrets.token_hex(8)}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    bash = Bash(workspace, requires_approval=False)
    outputs = await bypassed(
        bash,
        "cat /proc/$PPID/environ",
        "cat /proc/1/environ; tr '\\0' '\\n' < /proc/1/environ",
        f"cat /proc/*/environ; cat /proc/{os.getpid()}/environ",
        "ls /proc",
        "env",
        workspace=workspace,
    )
    joined = "\n".join(outputs)
    assert key not in joined
    leaked = [e for e in _hidden_environment(bash) if e in joined]
    assert leaked == []
    assert str(os.getpid()) not in outputs[3].split()  # the agent's process is not there


async def test_without_the_sandbox_the_parent_environment_is_readable(workspace: Path) -> None:
    """The positive control: the same read unsandboxed shows the agent's environment."""
    bash = Bash(workspace, sandbox="off")
    hidden = _hidden_environment(bash)
    if not hidden:
        pytest.skip("this process started with no environment variable Bash filters out")
    result = await run(bash, "cat /proc/$PPID/environ")
    assert any(e in str(result.content) for e in hidden)


# --- the network ------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    seen.append(conn.recv(100) or b"(connected)")
                except OSError:
                    seen.append(b"(connected)")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], seen
    stop.set()
    thread.join()
    server.close()


async def test_no_connection_reaches_a_listening_socket(
    workspace: Path, listener: tuple[int, list[bytes]]
) -> None:
    port, seen = listener
    outputs = await bypassed(
        Bash(workspace, requires_approval=False),
        f"echo hi > /dev/tcp/127.0.0.1/{port}",
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2)\"",
        f"curl -s -m 2 http://127.0.0.1:{port}/ || echo failed",
        f"python3 -c \"import socket; socket.create_connection(('localhost', {port}), 2)\"",
        workspace=workspace,
    )
    await asyncio.sleep(0.3)
    assert seen == [], outputs
    assert "Connection refused" in outputs[0] or "refused" in "".join(outputs)


async def test_network_true_reaches_it(workspace: Path, listener: tuple[int, list[bytes]]) -> None:
    """The positive control: with the network allowed the connection arrives."""
    port, seen = listener
    await run(Bash(workspace, network=True), f"echo hi > /dev/tcp/127.0.0.1/{port}")
    assert await _eventually(lambda: bool(seen))
    assert seen == [b"hi\n"]


# --- processes --------------------------------------------------------------------------------


def _host_processes_with(marker: str) -> list[int]:
    """Live host pids whose command line mentions ``marker``."""
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(name))
    return found


async def _gone(marker: str, within: float = 5.0) -> bool:
    return await _eventually(lambda: not _host_processes_with(marker), within)


LEFT_BEHIND = [
    "(exec -a {m} sleep 300) > /dev/null 2>&1 &",
    "setsid bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1 < /dev/null &",
    "nohup bash -c 'exec -a {m} sleep 300' > /dev/null 2>&1 & disown",
    "(bash -c '(exec -a {m} sleep 300) &' &) > /dev/null 2>&1",
    "set -m; (trap '' TERM HUP; exec -a {m} sleep 300) > /dev/null 2>&1 &",
]


@pytest.mark.parametrize("shape", LEFT_BEHIND)
async def test_no_background_process_survives_the_call(workspace: Path, shape: str) -> None:
    marker = f"dive-bg-{secrets.token_hex(4)}"
    command = shape.format(m=marker) + "; sleep 0.2; echo started"
    outputs = await bypassed(Bash(workspace, requires_approval=False), command, workspace=workspace)
    assert "started" in outputs[0]
    assert await _gone(marker), f"{_host_processes_with(marker)} outlived the call"


async def test_unsandboxed_a_detached_process_does_survive(workspace: Path) -> None:
    """The positive control: the process-table check sees what ``sandbox="off"`` leaves."""
    marker = f"dive-bg-{secrets.token_hex(4)}"
    bash = Bash(workspace, sandbox="off")
    await run(bash, f"setsid bash -c 'exec -a {marker} sleep 300' > /dev/null 2>&1 < /dev/null &")
    try:
        await asyncio.sleep(0.3)
        assert _host_processes_with(marker)
    finally:
        for pid in _host_processes_with(marker):
            os.kill(pid, 9)


async def test_a_timeout_kills_everything_in_the_sandbox(workspace: Path) -> None:
    marker = f"dive-to-{secrets.token_hex(4)}"
    command = f"(trap '' TERM; exec -a {marker} sleep 300) & exec -a {marker} sleep 300"
    result = await run(Bash(workspace, kill_grace=0.5), command, limit=1)
    assert "timed out after 1 s" in str(result.content)
    assert await _gone(marker)


async def test_a_cancelled_call_kills_everything_in_the_sandbox(workspace: Path) -> None:
    marker = f"dive-cx-{secrets.token_hex(4)}"
    bash = Bash(workspace, kill_grace=0.5)
    value, _ = bash.validate({"command": f"exec -a {marker} sleep 300"})
    task = asyncio.create_task(
        bash.call(value, ToolContext(tool_call_id="c", tool_name="Bash", turn_id="t"))
    )
    assert await _eventually(lambda: bool(_host_processes_with(marker)), within=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _gone(marker)


# --- where the sandbox cannot run -------------------------------------------------------------


async def test_without_bubblewrap_bash_refuses_and_says_so_once(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bash = Bash(workspace, sandbox=Sandbox(bwrap=f"/nonexistent/bwrap-{secrets.token_hex(3)}"))
    with caplog.at_level(logging.WARNING, logger="dive.toolkit"):
        first = await run(bash, "touch made")
        second = await run(bash, "touch made")
    assert first.is_error
    assert second.is_error
    assert "not installed" in str(first.content)
    assert "apt-get install bubblewrap" in str(first.content)
    assert 'sandbox="off"' in str(first.content)
    assert not (workspace / "made").exists()
    warnings = [r for r in caplog.records if "will be refused" in r.getMessage()]
    assert len(warnings) == 1


async def test_sandbox_off_is_logged_and_on_the_approval_record(
    workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="dive.toolkit"):
        bash = Bash(workspace, sandbox="off", requires_approval=False)
    assert any("unconfined" in r.getMessage() for r in caplog.records)
    assert bash.definition.metadata["dive.sandbox"] == "off"
    model = ScriptedModel([tool_use(call("Bash", {"command": "echo hi"}, id="c1")), text("ok")])
    config = PermissionConfig.from_rules(allow=["Bash(echo:*)"], workspace=workspace)
    agent = Agent(model=model, tools=[bash], approval_policy=permission_policy(config))
    result = await agent.run("go")
    [entry] = audit_log(result.turn)
    assert (entry.decision, entry.rule) == ("allow", "Bash(echo:*)")
    assert entry.message is not None
    assert "without the OS sandbox" in entry.message


def test_a_bad_sandbox_argument_is_refused(workspace: Path) -> None:
    bad: Any = "on"
    with pytest.raises(UserError, match="sandbox must be a Sandbox"):
        Bash(workspace, sandbox=bad)
