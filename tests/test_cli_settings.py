"""CLI settings precedence (flags > environment > project file > user file) and the model pick."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dive.cli._errors import CliError
from dive.cli._providers import choose_model
from dive.cli._settings import Flags, resolve_settings
from dive.errors import UnknownProviderError
from dive.permissions import PermissionConfigError
from tests._cli import dive, result_of


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    _write(
        home / ".dive" / "settings.json",
        {
            "model": "anthropic:user-model",
            "maxTurns": 7,
            "effort": "low",
            "permissions": {"defaultMode": "plan", "deny": ["Read(./secret)"]},
        },
    )
    _write(
        work / ".dive" / "settings.json",
        {
            "model": "anthropic:project-model",
            "sessionsDb": "state/sessions.db",
            "permissions": {"defaultMode": "acceptEdits", "allow": ["Bash(ls:*)"]},
        },
    )
    return home, work


def test_each_layer_overrides_the_one_below(layout: tuple[Path, Path]) -> None:
    home, work = layout
    files = resolve_settings(Flags(workspace=work), environ={}, home=home)
    assert files.model == "anthropic:project-model"  # project over user
    assert files.max_turns == 7
    assert files.effort == "low"
    assert files.db == work / "state" / "sessions.db"  # relative to the project folder
    assert files.permissions.mode == "accept_edits"
    assert [r.text for r in files.permissions.allow] == ["Bash(ls:*)"]
    assert [r.text for r in files.permissions.deny] == ["Read(./secret)"]

    env = {
        "DIVE_MODEL": "anthropic:env-model",
        "DIVE_PERMISSION_MODE": "bypass",
        "DIVE_MAX_TURNS": "3",
    }
    from_env = resolve_settings(Flags(workspace=work), environ=env, home=home)
    assert from_env.model == "anthropic:env-model"
    assert from_env.max_turns == 3
    assert from_env.permissions.mode == "bypass"

    flags = Flags(
        workspace=work,
        model="anthropic:flag-model",
        permission_mode="dont_ask",
        max_turns=2,
        allow=("Bash(git status:*)",),
    )
    from_flags = resolve_settings(flags, environ=env, home=home)
    assert from_flags.model == "anthropic:flag-model"
    assert from_flags.max_turns == 2
    assert from_flags.permissions.mode == "dont_ask"
    assert [r.text for r in from_flags.permissions.allow] == ["Bash(ls:*)", "Bash(git status:*)"]


def test_the_local_file_beats_the_project_file(layout: tuple[Path, Path]) -> None:
    home, work = layout
    _write(work / ".dive" / "settings.local.json", {"model": "anthropic:local-model"})
    settings = resolve_settings(Flags(workspace=work), environ={}, home=home)
    assert settings.model == "anthropic:local-model"


def test_defaults_without_any_file(tmp_path: Path) -> None:
    settings = resolve_settings(Flags(workspace=tmp_path), environ={}, home=tmp_path)
    assert settings.model is None
    assert settings.db == tmp_path / ".dive" / "sessions.db"
    assert settings.permissions.mode == "default"
    assert settings.max_retries == 2


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"maxTurns": "many"}, '"maxTurns" in'),
        ({"model": 3}, '"model" in'),
        ({"thinking": "lots"}, "enabled, adaptive, disabled"),
    ],
)
def test_a_bad_value_names_the_file_and_key(
    tmp_path: Path, data: dict[str, Any], says: str
) -> None:
    _write(tmp_path / ".dive" / "settings.json", data)
    with pytest.raises(CliError, match=says) as caught:
        resolve_settings(Flags(workspace=tmp_path), environ={}, home=tmp_path / "nohome")
    assert caught.value.code == 2
    assert str(tmp_path / ".dive" / "settings.json") in str(caught.value)


def test_a_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="DIVE_MAX_RETRIES"):
        resolve_settings(
            Flags(workspace=tmp_path), environ={"DIVE_MAX_RETRIES": "x"}, home=tmp_path
        )


def test_bad_permissions_in_a_file_are_the_engines_error(tmp_path: Path) -> None:
    _write(tmp_path / ".dive" / "settings.json", {"permissions": {"defaultMode": "yolo"}})
    with pytest.raises(PermissionConfigError):
        resolve_settings(Flags(workspace=tmp_path), environ={}, home=tmp_path / "nohome")


def test_the_model_pick() -> None:
    offline = choose_model(None, {})
    assert offline.offline
    assert offline.notice is not None
    assert "ANTHROPIC_API_KEY" in offline.notice
    assert "OPENAI_API_KEY" in offline.notice
    assert choose_model(None, {"ANTHROPIC_API_KEY": "k"}).spec == "anthropic:claude-sonnet-4-6"
    assert choose_model(None, {"OPENAI_API_KEY": "k"}).spec == "openai:gpt-5"
    assert choose_model(None, {"GOOGLE_API_KEY": "k"}).provider == "google"
    wanted = choose_model("openai:gpt-5", {"ANTHROPIC_API_KEY": "k"})
    assert wanted.offline
    assert wanted.notice is not None
    assert "OPENAI_API_KEY" in wanted.notice
    assert wanted.name == "claude-sonnet-4-6"  # the simulator answers as a priced Claude
    assert choose_model("claude-haiku-4-5", {}).name == "claude-haiku-4-5"
    served = choose_model("anthropic:claude-opus-4-6", {"ANTHROPIC_BASE_URL": "http://x"})
    assert not served.offline
    assert served.base_url == "http://x"
    assert not choose_model("ollama:qwen3", {}).offline  # a local server needs no key
    with pytest.raises(UnknownProviderError):
        choose_model("nope:x", {})


def test_settings_files_reach_a_real_run(layout: tuple[Path, Path]) -> None:
    """Across a process: the project file's model and allow rule, then env and flag over it."""
    home, work = layout
    args = ("run", "-o", "json", "run `ls`")
    by_file = dive(*args, cwd=work, home=home)
    data = result_of(by_file)
    assert data["model"] == "anthropic:project-model"
    assert data["status"] == "completed"  # Bash(ls:*) allowed by the project file
    assert (work / "state" / "sessions.db").is_file()
    by_env = dive(*args, cwd=work, home=home, env={"DIVE_MODEL": "anthropic:env-model"})
    assert result_of(by_env)["model"] == "anthropic:env-model"
    by_flag = dive(*args, "--model", "anthropic:flag-model", cwd=work, home=home,
                   env={"DIVE_MODEL": "anthropic:env-model"})  # fmt: skip
    assert result_of(by_flag)["model"] == "anthropic:flag-model"


async def test_the_settings_reach_the_agent(tmp_path: Path) -> None:
    """What the flags set is what the agent runs with; the toolkit is confined to the workspace."""
    from dive.cli._runtime import open_runtime

    work = tmp_path / "work"
    work.mkdir()
    flags = Flags(
        workspace=work,
        system_prompt="You are terse.",
        max_turns=3,
        thinking="enabled",
        effort="high",
        db=tmp_path / "s.db",
    )
    settings = resolve_settings(flags, environ={}, home=tmp_path)
    async with open_runtime(settings, environ={}) as rt:
        agent = rt.agent
        assert rt.choice.offline
        assert agent.system_prompt().startswith("You are terse.")
        assert agent.limits.max_model_calls_per_turn == 3
        assert agent.model_settings is not None
        assert agent.model_settings.thinking == "enabled"
        assert agent.model_settings.reasoning_effort == "high"
        names = {t.name for t in agent.tools}
        assert {"Read", "Write", "Edit", "Bash", "Grep", "Glob", "AskUser"} <= names
        (tmp_path / "outside.txt").write_text("secret")
        result = await agent.run("read ../outside.txt")
        assert result.status == "completed"
        [call] = result.turn.tool_calls
        assert call.name == "Read"
        assert "secret" not in result.output_text
        assert "did not succeed" in result.output_text  # outside the workspace
