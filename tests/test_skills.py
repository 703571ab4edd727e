"""Skills from a fixture project: discovery, the catalog in the cached prefix, loading, files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dive.agent import Agent
from dive.errors import UserError
from dive.sessions import MemorySessionStore
from dive.skills import Skill, SkillLoader, discover_skills, substitute
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import tool
from dive.turns import find_reminder

FIXTURE = Path(__file__).parent / "fixtures" / "skills_project"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    return root


def test_skills_are_found_in_the_default_folders_first_one_wins(project: Path) -> None:
    found = {s.name: s for s in discover_skills(root=project)}
    assert sorted(found) == ["commit", "release-notes", "translate"]
    notes = found["release-notes"]
    assert notes.root == (project / ".dive/skills/release-notes").resolve()  # not .claude's
    assert notes.allowed_tools == ("Read", "Grep")
    assert notes.triggers == ("release notes", "changelog")
    assert found["commit"].is_command
    assert found["translate"].patterns == ("(?i)\\bin (french|german)\\b",)


def test_arguments_are_substituted() -> None:
    assert substitute("v$1 ($2) - $ARGUMENTS - $3.", '2.0 "big cat"') == (
        'v2.0 (big cat) - 2.0 "big cat" - .'
    )
    assert substitute("No placeholders.", "x y") == "No placeholders.\n\nARGUMENTS: x y"
    assert substitute("No placeholders.", "") == "No placeholders."


async def test_the_catalog_is_in_the_prefix_and_a_skill_loads_on_demand(project: Path) -> None:
    model = ScriptedModel(
        [
            tool_use(
                call("Skill", {"skill": "release-notes", "arguments": '3.1 "Otter"'}, id="s1")
            ),
            tool_use(
                call(
                    "ReadSkillFile",
                    {"skill": "release-notes", "path": "templates/notes.md"},
                    id="f1",
                )
            ),
            text("Here are the notes."),
        ]
    )
    agent = Agent(model=model, extensions=[SkillLoader(root=project)])
    result = await agent.run("write the release notes for 3.1")
    assert result.status == "completed"
    system = model.requests[0].system
    assert "- release-notes: Write release notes" in system
    assert "- translate: Translate text" in system
    assert "commit" not in system  # a slash command is not listed
    loaded = model.requests[1].messages[-1].tool_result
    assert loaded is not None
    assert 'Write the release notes for version 3.1 (codename "Otter").' in loaded.text
    assert 'All arguments: 3.1 "Otter"' in loaded.text
    assert "templates/notes.md" in loaded.text
    read = model.requests[2].messages[-1].tool_result
    assert read is not None
    assert "# Release {version}" in read.text
    # the prompt prefix is byte-identical on every call (the cache keeps it)
    assert len({r.system for r in model.requests}) == 1
    # the user's message suggested the skill (its trigger), to the model only
    hint = find_reminder(model.requests[0].messages, "skill-trigger")
    assert hint is not None
    assert "release-notes" in hint.content
    assert find_reminder(result.turn.messages, "skill-trigger") is None


async def test_files_outside_the_skill_folder_are_refused(project: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    skill_dir = project / ".dive/skills/release-notes"
    os.symlink(tmp_path / "secret.txt", skill_dir / "link.txt")
    model = ScriptedModel(
        [
            tool_use(
                call(
                    "ReadSkillFile",
                    {"skill": "release-notes", "path": "../../../../secret.txt"},
                    id="a",
                ),
                call("ReadSkillFile", {"skill": "release-notes", "path": "link.txt"}, id="b"),
            ),
            text("ok"),
        ]
    )
    agent = Agent(model=model, extensions=[SkillLoader(root=project)])
    result = await agent.run("go")
    for r in result.tool_call_results():
        assert r.result is not None
        assert r.result.is_error
        assert "top secret" not in r.result.text


async def test_changes_are_appended_once_and_the_prefix_never_rewritten(project: Path) -> None:
    store = MemorySessionStore()
    model = ScriptedModel([text("one"), text("two"), text("three")])
    agent = Agent(model=model, extensions=[SkillLoader(root=project)], session=store.session("s"))
    await agent.run("first")
    new = project / ".agents/skills/summarise"
    new.mkdir()
    (new / "SKILL.md").write_text(
        "---\nname: summarise\ndescription: Summarise a text.\n---\nDo it."
    )
    shutil.rmtree(project / ".agents/skills/translate")
    second = await agent.run("second")
    note = find_reminder(second.turn.messages, "skills")
    assert note is not None
    assert "- summarise: Summarise a text." in note.content
    assert "No longer available: translate." in note.content
    third = await agent.run("third")
    assert find_reminder(third.turn.messages, "skills") is None  # announced once
    assert len({r.system for r in model.requests}) == 1
    assert "translate" in model.requests[2].system  # the prefix is kept as it was


async def test_a_slash_command_runs_the_skill_with_its_arguments(project: Path) -> None:
    model = ScriptedModel([text("committed")])
    agent = Agent(model=model, extensions=[SkillLoader(root=project)])
    result = await agent.run("/commit fix the parser")
    note = find_reminder(result.turn.messages, "skill-command")
    assert note is not None
    assert "Commit the staged changes with the message: fix the parser" in note.content
    assert any("fix the parser" in m.text for m in model.requests[0].messages)


async def test_an_active_skill_s_allowed_tools_pass_the_approval_gate(project: Path) -> None:
    ran: list[str] = []

    @tool(name="Read", requires_approval=True)
    def read(path: str) -> str:
        """Read a file."""
        ran.append(path)
        return "text"

    without = ScriptedModel([tool_use(call("Read", {"path": "a"}, id="r0"))])
    agent = Agent(model=without, tools=[read], extensions=[SkillLoader(root=project)])
    first = await agent.run("go")
    assert first.status == "suspended"  # no skill active: Read asks first
    model = ScriptedModel(
        [
            tool_use(call("Skill", {"skill": "release-notes"}, id="s1")),
            tool_use(call("Read", {"path": "CHANGELOG.md"}, id="r1")),
            text("done"),
        ]
    )
    agent = Agent(model=model, tools=[read], extensions=[SkillLoader(root=project)])
    second = await agent.run("go")
    assert second.status == "completed"
    assert ran == ["CHANGELOG.md"]


def test_a_bad_skill_names_its_file(tmp_path: Path) -> None:
    bad = tmp_path / "skills" / "Bad_Name"
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text("---\ndescription: x\n---\nbody")
    with pytest.raises(UserError, match=r"Bad_Name.*invalid"):
        discover_skills([tmp_path / "skills"])
    skill = Skill.from_file(FIXTURE / ".agents/skills/translate")
    assert skill.name == "translate"
