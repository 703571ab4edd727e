"""``SkillLoader``: the extension that offers skills to an agent and loads them on demand.

- **Catalog, in the cached prefix.** Its rules (appended to the system prompt once, at
  construction) list each skill's name and description, sorted, so the prompt prefix stays
  byte-identical across turns and the provider's prompt cache keeps it. Skills added,
  changed or removed later are *appended* as a recorded ``skills`` reminder at the start of
  the next turn (the prefix is never rewritten); the reminder's details keep what the model
  was told, so a change is announced once.
- **``Skill`` tool.** ``Skill(skill, arguments)`` returns the skill's instructions with
  ``$ARGUMENTS`` and ``$1``…``$9`` substituted, read from disk at call time, and names its
  folder. While a skill is active (the rest of the invocation), calls of its
  ``allowed-tools`` (plain tool names or patterns) pass the approval gate unasked.
- **``ReadSkillFile`` tool.** Files beside a ``SKILL.md`` are read through the toolkit's
  ``Read``, confined to that skill's folder (no ``..``, no escaping links).
- **Content hook.** A user message that starts with ``/name`` runs the skill ``name`` (a slash
  command) with the rest as its arguments; a message matching a skill's ``triggers`` or
  ``patterns`` gets a reminder suggesting the skill.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field

from dive.agent import HookContext, Hooks
from dive.skills._skill import Skill, discover_skills
from dive.toolkit import Read
from dive.tools import (
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    ToolReturn,
    TypedTool,
)
from dive.turns import Reminder, find_latest_reminder

__all__ = ["ACTIVE_KEY", "ReadSkillFile", "SkillLoader", "SkillTool"]

ACTIVE_KEY = "dive.skills.active"
"""``ctx.values`` key: the names of the skills loaded in this invocation."""

CATALOG_HEADER = (
    "Skills are packaged instructions for particular tasks. When a task matches a skill's "
    "description, call the Skill tool with its name before doing the task, then follow what "
    "it returns. Available skills:"
)


def _catalog(skills: Iterable[Skill]) -> dict[str, str]:
    return {s.name: s.description for s in skills if not s.is_command}


def _listing(catalog: Mapping[str, str]) -> str:
    return "\n".join(f"- {name}: {catalog[name]}" for name in sorted(catalog))


class _SkillInput(BaseModel):
    skill: str = Field(description="The skill's name, as listed.")
    arguments: str = Field(default="", description="Arguments for the skill, if it takes any.")


class SkillTool(TypedTool[_SkillInput]):
    """``Skill(skill, arguments="")``: load a skill's instructions (see the module docstring).

    Args:
        loader: the loader whose skills it loads.
    """

    input_model = _SkillInput
    tool_name = "Skill"
    tool_description = (
        "Load a skill: its instructions for a kind of task, to follow next. Use it when a "
        "task matches one of the skills listed in your instructions."
    )
    tool_annotations = ToolAnnotations(title="Load a skill", read_only=True, idempotent=True)

    def __init__(self, loader: SkillLoader) -> None:
        super().__init__()
        self.loader = loader

    async def run(self, input: _SkillInput, ctx: ToolContext) -> ToolOutput:
        skill = self.loader.find(input.skill)
        if skill is None:
            known = ", ".join(sorted(s.name for s in self.loader.skills())) or "none"
            return ToolReturn(
                content=f"There is no skill named {input.skill!r} (available: {known}).",
                is_error=True,
            )
        active = cast("list[str]", ctx.values.setdefault(ACTIVE_KEY, []))
        if skill.name not in active:
            active.append(skill.name)
        return self.loader.content(skill, input.arguments)


class _ReadInput(BaseModel):
    skill: str = Field(description="The skill whose folder holds the file.")
    path: str = Field(description="The file, relative to the skill's folder.")
    offset: int | None = Field(default=None, ge=1, description="The 1-based first line.")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read.")


class ReadSkillFile(TypedTool[_ReadInput]):
    """``ReadSkillFile(skill, path)``: a file beside a ``SKILL.md``, confined to its folder.

    Args:
        loader: the loader whose skills' files it reads.
    """

    input_model = _ReadInput
    tool_name = "ReadSkillFile"
    tool_description = (
        "Read a file that belongs to a skill (a reference, template or script next to its "
        "SKILL.md), by the skill's name and the file's path relative to the skill's folder."
    )
    tool_annotations = ToolAnnotations(title="Read a skill file", read_only=True, idempotent=True)

    def __init__(self, loader: SkillLoader) -> None:
        super().__init__()
        self.loader = loader
        self._readers: dict[Path, Read] = {}

    async def run(self, input: _ReadInput, ctx: ToolContext) -> ToolOutput:
        skill = self.loader.find(input.skill)
        if skill is None:
            return ToolReturn(content=f"There is no skill named {input.skill!r}.", is_error=True)
        reader = self._readers.get(skill.root)
        if reader is None:
            reader = self._readers[skill.root] = Read(skill.root)
        args: dict[str, Any] = {"file_path": input.path}
        if input.offset is not None:
            args["offset"] = input.offset
        if input.limit is not None:
            args["limit"] = input.limit
        value, err = reader.validate(args)
        if err is not None:
            return ToolReturn(content=err, is_error=True)
        return await reader.call(value, ctx)


class SkillLoader:
    """An extension offering the skills found in ``folders``: ``Agent(extensions=[SkillLoader()])``.

    Args:
        folders: where to look (folders of skill folders); None: ``.dive/skills``,
            ``.claude/skills``, ``.agents/skills`` under ``root``, then ``~/.dive/skills``.
        root: the project root relative folders are resolved against.
        skills: skills to offer in addition (they win over found ones of the same name).
        watch: look for added, changed or removed skills before every turn and append what
            changed (False: the catalog is fixed at construction).
        auto_approve: let an active skill's ``allowed-tools`` pass the approval gate.
    """

    def __init__(
        self,
        folders: Iterable[str | Path] | None = None,
        *,
        root: str | Path = ".",
        skills: Sequence[Skill] = (),
        watch: bool = True,
        auto_approve: bool = True,
    ) -> None:
        self.folders = tuple(folders) if folders is not None else None
        self.root = Path(root)
        self.extra = tuple(skills)
        self.watch = watch
        self.auto_approve = auto_approve
        self._skills = self._scan()
        self._announced = _catalog(self._skills.values())
        self.skill_tool = SkillTool(self)
        self.read_tool = ReadSkillFile(self)

    def _scan(self) -> dict[str, Skill]:
        found = {s.name: s for s in discover_skills(self.folders, root=self.root)}
        found.update({s.name: s for s in self.extra})
        return found

    def skills(self) -> list[Skill]:
        """The skills as last found, sorted by name."""
        return sorted(self._skills.values(), key=lambda s: s.name)

    def find(self, name: str) -> Skill | None:
        """A skill by name, re-read from disk (so an edited skill is current).

        Args:
            name: the skill's name.
        """
        skill = self._skills.get(name)
        if skill is None and self.watch:
            self._skills = self._scan()
            skill = self._skills.get(name)
        if skill is None or skill in self.extra:
            return skill
        try:
            return Skill.from_file(skill.root)
        except Exception:
            return skill

    def content(self, skill: Skill, arguments: str) -> str:
        """What loading ``skill`` with ``arguments`` gives the model.

        Args:
            skill: the skill to load.
            arguments: what the model passed (substituted for ``$ARGUMENTS``, ``$1``…``$9``).
        """
        files = sorted(
            str(p.relative_to(skill.root))
            for p in skill.root.rglob("*")
            if p.is_file() and p.name != "SKILL.md"
        )[:50]
        listed = f" Its files: {', '.join(files)}." if files else ""
        return (
            f'<skill name="{skill.name}">\n{skill.render(arguments)}\n</skill>\n'
            f"The skill's folder is {skill.root}; read its files with "
            f'ReadSkillFile(skill="{skill.name}", path=...).{listed}'
        )

    # --- the Extension protocol ------------------------------------------------------------

    def tools(self) -> Sequence[Tool]:
        return [self.skill_tool, self.read_tool]

    def hooks(self) -> Hooks | None:
        return Hooks(pre_generation=[self._before_turn], pre_tool_use=[self._approve])

    def rules(self) -> str | None:
        if not self._announced:
            return None
        return f"{CATALOG_HEADER}\n{_listing(self._announced)}"

    # --- hooks -------------------------------------------------------------------------------

    async def _before_turn(self, ctx: HookContext[Any]) -> None:
        if self.watch:
            self._announce_changes(ctx)
        text = _input_text(ctx)
        if not text:
            return
        command = re.match(r"/([a-z0-9][a-z0-9-]*)(?:\s+(.*))?\Z", text.strip(), re.DOTALL)
        if command is not None:
            skill = self.find(command.group(1))
            if skill is not None:
                active = cast("list[str]", ctx.values.setdefault(ACTIVE_KEY, []))
                active.append(skill.name)
                body = self.content(skill, command.group(2) or "")
                reminder = Reminder(
                    name="skill-command", content=f"The user ran /{skill.name}:\n{body}"
                )
                ctx.append_reminder(reminder, recorded=True)
                return
        suggested = [s.name for s in self._skills.values() if _triggered(s, text)]
        if suggested:
            names = ", ".join(sorted(suggested))
            ctx.append_reminder(
                Reminder(
                    name="skill-trigger",
                    content=f"These skills may help with this message: {names}. Load one with "
                    "the Skill tool before starting.",
                )
            )

    def _announce_changes(self, ctx: HookContext[Any]) -> None:
        self._skills = self._scan()
        now = _catalog(self._skills.values())
        told = dict(self._announced)
        latest = find_latest_reminder(ctx.messages, "skills")
        if latest is not None and isinstance(latest.details, dict):
            told = {str(k): str(v) for k, v in cast("dict[Any, Any]", latest.details).items()}
        if now == told:
            return
        added = {k: v for k, v in now.items() if told.get(k) != v}
        removed = sorted(set(told) - set(now))
        parts = ["The available skills changed."]
        if added:
            parts.append(f"Added or updated:\n{_listing(added)}")
        if removed:
            parts.append(f"No longer available: {', '.join(removed)}.")
        ctx.append_reminder(
            Reminder(name="skills", content="\n".join(parts), details=dict(now)), recorded=True
        )

    async def _approve(self, ctx: HookContext[Any]) -> None:
        if not self.auto_approve or ctx.tool is None:
            return
        active = ctx.values.get(ACTIVE_KEY)
        if not active:
            return
        name = ctx.tool.name
        for skill_name in cast("list[str]", active):
            skill = self._skills.get(skill_name)
            if skill is not None and any(
                "(" not in p and fnmatch.fnmatchcase(name, p) for p in skill.allowed_tools
            ):
                ctx.approved = True
                return


def _input_text(ctx: HookContext[Any]) -> str:
    turn = ctx.turn
    if turn is None or turn.origin.kind != "input":
        return ""
    texts = [m.text for m in turn.messages if m.role == "user" and m.kind == "standard"]
    return "\n".join(t for t in texts if t)


def _triggered(skill: Skill, text: str) -> bool:
    low = text.lower()
    for word in skill.triggers:
        if re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", low):
            return True
    return any(re.search(p, text) for p in skill.patterns)
