"""``dive sessions``, ``dive models``, ``dive serve``, and the ways to start ``dive``."""

from __future__ import annotations

import json
import subprocess
import sys
import types
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from dive import Agent
from dive.cli import main
from dive.cli._serve import VIEWER_MISSING
from dive.sessions import SQLiteSessionStore
from dive.testing import ScriptedModel
from tests._cli import DIVE, ROOT, cli_env, dive


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def make_agent(session_id: str) -> Agent[str, None]:
    """An ``--agent`` factory: the agent the viewer resumes ``session_id``'s turns with."""
    return Agent(model=ScriptedModel(["ok"]), name=f"for-{session_id}")


def test_sessions_list_show_fork_and_rm(places: tuple[Path, Path]) -> None:
    home, work = places
    assert "no sessions yet" in dive("sessions", "list", cwd=work, home=home).stdout
    for sid, text in (("s1", "my name is Ada"), ("s2", "hello")):
        assert dive("run", "--session", sid, text, cwd=work, home=home).returncode == 0

    listed = dive("sessions", "list", "--json", cwd=work, home=home)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["id"], r["turn_count"]) for r in rows] == [("s2", 1), ("s1", 1)]  # newest first
    table = dive("sessions", "list", cwd=work, home=home).stdout
    assert "s1" in table
    assert "s2" in table

    shown = dive("sessions", "show", "s1", cwd=work, home=home)
    assert "> my name is Ada" in shown.stdout
    assert "Nice to meet you, Ada" in shown.stdout
    assert "completed" in shown.stdout
    as_json = dive("sessions", "show", "s1", "--json", cwd=work, home=home)
    [record] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert record["status"] == "completed"

    forked = dive("sessions", "fork", "s1", "s3", cwd=work, home=home)
    assert forked.stdout.strip() == "s3"
    again = dive("run", "--resume", "s3", "what is my name?", cwd=work, home=home)
    assert "my name is Ada" in again.stdout  # the fork carries the conversation
    fresh = dive("sessions", "fork", "s1", cwd=work, home=home).stdout.strip()
    assert fresh.startswith("dive-")
    taken = dive("sessions", "fork", "s1", "s3", cwd=work, home=home)
    assert taken.returncode == 2
    assert "already exists" in taken.stderr

    removed = dive("sessions", "rm", "s2", cwd=work, home=home)
    assert removed.stdout.strip() == "removed s2"
    gone = dive("sessions", "rm", "s2", cwd=work, home=home)
    assert gone.returncode == 1
    assert gone.stderr.startswith("dive: no session s2")
    assert len(gone.stderr.splitlines()) == 1
    ids = {json.loads(line)["id"] for line in
           dive("sessions", "list", "--json", cwd=work, home=home).stdout.splitlines()}  # fmt: skip
    assert ids == {"s1", "s3", fresh}


def test_models_says_which_providers_have_credentials(places: tuple[Path, Path]) -> None:
    home, work = places
    offline = dive("models", cwd=work, home=home, env={"COLUMNS": "200"})
    assert offline.returncode == 0, offline.stderr
    lines = offline.stdout.splitlines()
    anthropic = next(line for line in lines if line.startswith("anthropic "))
    assert " no " in anthropic
    assert "ANTHROPIC_API_KEY" in anthropic
    assert any(line.startswith("ollama ") and "local server" in line for line in lines)
    assert "default: offline" in offline.stdout
    keyed = dive("models", cwd=work, home=home, env={"OPENAI_API_KEY": "k", "COLUMNS": "200"})
    openai = next(line for line in keyed.stdout.splitlines() if line.startswith("openai "))
    assert "yes (OPENAI_API_KEY)" in openai
    assert "default: openai:gpt-5" in keyed.stdout


def _in_process(
    args: list[str], home: Path, work: Path, monkeypatch: pytest.MonkeyPatch
) -> int | str | None:
    monkeypatch.chdir(work)
    for key, value in cli_env(home).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(SystemExit) as exited:
        main(args)
    return exited.value.code


def test_serve_hands_the_store_and_the_factory_to_the_viewer(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, work = places
    calls: list[tuple[Any, dict[str, Any]]] = []

    def serve(store: Any, **options: Any) -> None:
        calls.append((store, options))

    viewer = types.ModuleType("dive.viewer")
    viewer.__dict__["serve"] = serve
    monkeypatch.setitem(sys.modules, "dive.viewer", viewer)
    db = work / "s.db"
    code = _in_process(
        ["serve", "--db", str(db), "--port", "0", "--host", "127.0.0.1",
         "--agent", "tests.test_cli_commands:make_agent"],
        home, work, monkeypatch,
    )  # fmt: skip
    assert code in (0, None)
    [(store, options)] = calls
    assert isinstance(store, SQLiteSessionStore)
    assert store.path == db
    assert options == {"host": "127.0.0.1", "port": 0, "agent_factory": make_agent}


def test_serve_passes_spans_and_model_when_given(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, work = places
    calls: list[dict[str, Any]] = []

    def serve(_: Any, **options: Any) -> None:
        calls.append(options)

    viewer = types.ModuleType("dive.viewer")
    viewer.__dict__["serve"] = serve
    monkeypatch.setitem(sys.modules, "dive.viewer", viewer)
    args = ["serve", "--spans", "spans.json", "--model", "anthropic:claude-sonnet-4-5"]
    assert _in_process(args, home, work, monkeypatch) in (0, None)
    [options] = calls
    assert options["spans"] == Path("spans.json")
    assert options["model"] == "anthropic:claude-sonnet-4-5"


def test_serve_defaults_to_the_cli_sessions_file(
    places: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    home, work = places
    seen: list[Any] = []

    def serve(store: Any, **_: Any) -> None:
        seen.append(store)

    viewer = types.ModuleType("dive.viewer")
    viewer.__dict__["serve"] = serve
    monkeypatch.setitem(sys.modules, "dive.viewer", viewer)
    assert _in_process(["serve"], home, work, monkeypatch) in (0, None)
    [store] = seen
    assert isinstance(store, SQLiteSessionStore)
    assert store.path == home / ".dive" / "sessions.db"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "--db", "a.db", "--dsn", "postgresql://x"], "use --db or --dsn, not both"),
        (["serve", "--agent", "nocolon"], "write it as module:factory"),
        (["serve", "--agent", "no_such_module_here:f"], "cannot import no_such_module_here"),
        (["serve", "--agent", "json:no_such_name"], "json has no callable no_such_name"),
    ],
)
def test_serve_usage_errors(
    places: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    home, work = places
    viewer = types.ModuleType("dive.viewer")

    def serve(*_: Any, **__: Any) -> None:
        pytest.fail("not reached")

    viewer.__dict__["serve"] = serve
    monkeypatch.setitem(sys.modules, "dive.viewer", viewer)
    assert _in_process(args, home, work, monkeypatch) == 2
    err = capsys.readouterr().err
    assert says in err
    assert len(err.splitlines()) == 1


def test_serve_without_the_viewer_names_the_extra(
    places: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, work = places
    monkeypatch.setitem(sys.modules, "dive.viewer", None)  # import dive.viewer → ImportError
    assert _in_process(["serve"], home, work, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err == f"dive: {VIEWER_MISSING}\n"
    assert "pip install 'dive-agents[viewer]'" in err


def test_serve_runs_the_real_viewer(places: tuple[Path, Path]) -> None:
    for module in ("dive.viewer", "starlette", "uvicorn", "jinja2"):  # the viewer extra
        pytest.importorskip(module)
    home, work = places
    proc = subprocess.Popen(
        [*DIVE, "serve", "--db", str(work / "s.db"), "--port", "0"],
        cwd=work,
        env=cli_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("dive viewer: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "dive"], [str(Path(sys.executable).parent / "dive")]],
    ids=["python -m dive", "console script"],
)
def test_both_ways_to_start_it(command: list[str], places: tuple[Path, Path]) -> None:
    home, work = places
    helped = subprocess.run(
        [*command, "--help"], capture_output=True, text=True, env=cli_env(home), check=False
    )
    assert helped.returncode == 0, helped.stderr
    for name in ("chat", "run", "sessions", "models", "serve"):
        assert name in helped.stdout
    ran = subprocess.run(
        [*command, "run", "what is 2 + 2"], capture_output=True, text=True, cwd=work,
        env=cli_env(home), check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "**4**" in ran.stdout


def test_the_console_script_is_declared() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"dive": "dive.__main__:main"}
    assert {"rich", "typer", "prompt-toolkit"} <= {
        dep.split(">")[0].split("[")[0] for dep in project["optional-dependencies"]["cli"]
    }
