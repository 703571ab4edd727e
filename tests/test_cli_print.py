"""``dive run`` in print mode, as a script runs it: a subprocess, offline (the simulator)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from dive.cli import main
from tests._cli import cli_env, dive, result_of


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("remember the milk\n")
    return home, work


def test_text_prints_the_answer_and_the_offline_notice_goes_to_stderr(
    places: tuple[Path, Path],
) -> None:
    home, work = places
    proc = dive("run", "what is 6 * 7?", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "42" in proc.stdout
    notice = proc.stderr.splitlines()
    assert len(notice) == 1, proc.stderr
    assert notice[0].startswith("dive: offline:")
    assert "ANTHROPIC_API_KEY" in notice[0]
    assert "simulator" in notice[0]
    assert (home / ".dive" / "sessions.db").is_file()  # the default store


def test_json_is_one_object_with_status_and_output(places: tuple[Path, Path]) -> None:
    home, work = places
    proc = dive("run", "--output-format", "json", "read notes.txt", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    data = result_of(proc)
    assert data["status"] == "completed"
    assert "remember the milk" in data["output"]
    assert data["offline"] is True
    assert data["tool_calls"] == [
        {"id": data["tool_calls"][0]["id"], "name": "Read", "state": "completed"}
    ]
    assert data["cost_usd"] > 0  # priced as the model the simulator answers as
    assert data["model_calls"] == 2


def test_stream_json_is_one_event_per_line_with_the_result_last(
    places: tuple[Path, Path],
) -> None:
    home, work = places
    proc = dive("run", "-o", "stream-json", "list the files", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "start"
    assert types[-1] == "result"
    assert types.count("result") == 1
    for kind in ("model_event", "message", "tool_call", "tool_call_result", "turn_ended"):
        assert kind in types
    assert types.index("tool_call") < types.index("tool_call_result") < types.index("turn_ended")
    assert events[-1]["status"] == "completed"
    assert "notes.txt" in events[-1]["output"]
    assert events[0]["session_id"] == events[-1]["session_id"]


def test_the_prompt_comes_from_stdin_when_piped(places: tuple[Path, Path]) -> None:
    home, work = places
    proc = dive("run", "-o", "json", cwd=work, home=home, input="what is (2 + 3) * 4\n")
    assert proc.returncode == 0, proc.stderr
    assert "20" in result_of(proc)["output"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run"], "no prompt"),
        (["run", "--model", "nope:model", "hi"], "unknown provider 'nope'"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(
    places: tuple[Path, Path], args: list[str], says: str
) -> None:
    home, work = places
    proc = dive(*args, cwd=work, home=home)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert says in proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "--output-format", "yaml", "hi"], "--output-format"),
        (["run", "--resume", "missing", "hi"], "no such session"),
        (["run", "--session", "a", "--continue", "hi"], "only one of"),
        (["run", "--session", "bad id!", "hi"], "invalid session id"),
        (["run", "--thinking", "lots", "hi"], "--thinking must be one of"),
        (["run", "--max-turns", "0", "hi"], "--max-turns"),
        (["run", "--workspace", "no/such/dir", "hi"], "not a folder"),
        (["run", "--permission-mode", "yolo", "hi"], "yolo"),
        (["run", "--deny", "Bash(", "hi"], "Bash("),
        (["run", "--no-such-flag"], "No such option"),
        (["sessions", "show", "nope"], "no sessions file"),
        (["chat", "--model", "nope:model"], "unknown provider 'nope'"),
        (["chat", "--model", "not-a-known-model-name"], "not-a-known-model-name"),
        (["chat", "--resume", "missing"], "no such session"),
    ],
)
def test_more_usage_errors_in_process(
    places: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    home, work = places
    monkeypatch.chdir(work)
    for key, value in cli_env(home).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as exited:
        main(args)
    out = capsys.readouterr()
    assert exited.value.code in (1, 2), out
    if args[0] in ("run", "chat"):
        assert exited.value.code == 2
    assert says in out.err
    assert "Traceback" not in out.err
    assert out.out == ""


def test_a_call_that_needs_approval_suspends_with_exit_3(places: tuple[Path, Path]) -> None:
    home, work = places
    proc = dive("run", "-o", "json", "run `echo hi`", cwd=work, home=home)
    assert proc.returncode == 3, proc.stderr
    data = result_of(proc)
    assert data["status"] == "suspended"
    assert data["pending"][0]["reason"] == "approval_required"
    assert data["pending"][0]["input"] == {"command": "echo hi"}
    assert f"dive chat --resume {data['session_id']}" in proc.stderr


def test_an_allow_rule_lets_it_run(places: tuple[Path, Path]) -> None:
    home, work = places
    proc = dive("run", "--allow", "Bash(echo:*)", "run `echo allowed-ok`", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    assert "allowed-ok" in proc.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_server_is_one_line_and_exit_1(places: tuple[Path, Path]) -> None:
    home, work = places
    url = f"http://127.0.0.1:{_closed_port()}"
    proc = dive("run", "hi", cwd=work, home=home, env={"ANTHROPIC_BASE_URL": url})
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "incomplete (provider_error)" in lines[0]
    assert "could not connect" in lines[0]
    assert "offline" not in proc.stderr  # a base URL counts as configured
    assert proc.stdout == ""


def test_sessions_continue_across_processes(places: tuple[Path, Path]) -> None:
    home, work = places
    first = dive("run", "-o", "json", "--session", "s1", "my name is Ada", cwd=work, home=home)
    assert result_of(first)["session_id"] == "s1"
    again = dive("run", "--session", "s1", "what is my name?", cwd=work, home=home)
    assert again.returncode == 0, again.stderr
    assert "my name is Ada" in again.stdout
    latest = dive("run", "-o", "json", "--continue", "what did I say before?", cwd=work, home=home)
    data = result_of(latest)
    assert data["session_id"] == "s1"
    assert "what is my name?" in data["output"]
    resumed = dive("run", "-o", "json", "--resume", "s1", "hello", cwd=work, home=home)
    assert result_of(resumed)["session_id"] == "s1"
    fresh = dive("run", "-o", "json", "what did I say before?", cwd=work, home=home)
    assert result_of(fresh)["session_id"] != "s1"
    assert "first thing you have said" in result_of(fresh)["output"]


def test_a_session_db_can_be_chosen(places: tuple[Path, Path]) -> None:
    home, work = places
    db = work / "elsewhere.db"
    proc = dive("run", "--db", str(db), "hi", cwd=work, home=home)
    assert proc.returncode == 0, proc.stderr
    assert db.is_file()
    assert not (home / ".dive" / "sessions.db").exists()
    env_db = work / "env.db"
    proc = dive("run", "hi", cwd=work, home=home, env={"DIVE_SESSIONS_DB": str(env_db)})
    assert proc.returncode == 0, proc.stderr
    assert env_db.is_file()
