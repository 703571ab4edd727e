"""``Skill``: one ``SKILL.md`` (the agentskills.io format), and finding skills in folders.

A skill is a folder holding ``SKILL.md``: YAML front matter with ``name`` (lowercase letters,
digits and hyphens, at most 64 characters), ``description`` (what it does and when to use
it), and optionally ``allowed-tools``, ``triggers`` (keywords) and ``patterns`` (regular
expressions); the body is the instructions. Files beside it (scripts, references,
templates) belong to the skill. A skill without a description is a slash command: it is not
listed for the model, and the user runs it by typing ``/name arguments``.

:func:`discover_skills` looks in each folder's subfolders for ``SKILL.md``, in the order the
folders are given (by default ``.dive/skills``, ``.claude/skills``, ``.agents/skills`` under
the project root, then ``~/.dive/skills``); the first skill of a name wins.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dive.errors import UserError
from dive.skills._frontmatter import list_field, read_front_matter

__all__ = ["DEFAULT_SKILL_DIRS", "Skill", "discover_skills", "substitute"]

DEFAULT_SKILL_DIRS = (".dive/skills", ".claude/skills", ".agents/skills", "~/.dive/skills")

_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?")
_OWN = frozenset({"name", "description", "allowed-tools", "allowed_tools", "triggers", "patterns"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """One skill.

    Attributes:
        name: the skill's name (``Skill(skill=name)``, or ``/name`` for a slash command).
        description: what it does and when to use it ("" for a slash command).
        instructions: the body of ``SKILL.md``.
        root: the skill's folder (its other files are read relative to it).
        allowed_tools: tools the skill may use without asking while it is active.
        triggers: keywords in the user's message that suggest the skill.
        patterns: regular expressions on the user's message that suggest it.
        metadata: the other front-matter fields.
    """

    name: str
    description: str = ""
    instructions: str = ""
    root: Path
    allowed_tools: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @property
    def path(self) -> Path:
        """The ``SKILL.md`` file."""
        return self.root / "SKILL.md"

    @property
    def is_command(self) -> bool:
        """A slash command (no description): run by the user, not listed for the model."""
        return not self.description

    @classmethod
    def from_file(cls, path: str | Path) -> Skill:
        """Load a ``SKILL.md`` (or the folder holding one).

        Args:
            path: a ``SKILL.md`` file, or the folder holding one.

        Raises:
            UserError: it cannot be read, its front matter is malformed, or its name is
                invalid.
        """
        p = Path(path).expanduser()
        if p.is_dir():
            p = p / "SKILL.md"
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read skill {p}: {exc.strerror}") from exc
        meta, body = read_front_matter(text, source=str(p))
        name = str(meta.get("name") or p.parent.name)
        if not _NAME.fullmatch(name):
            raise UserError(
                f"{p}: skill name {name!r} is invalid: use at most 64 lowercase letters, digits "
                "and hyphens, not starting or ending with a hyphen"
            )
        allowed = meta.get("allowed-tools", meta.get("allowed_tools"))
        patterns = list_field(meta.get("patterns"), name="patterns", source=str(p))
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UserError(
                    f"{p}: pattern {pattern!r} is not a regular expression: {exc}"
                ) from exc
        return cls(
            name=name,
            description=str(meta.get("description") or "").strip(),
            instructions=body.strip(),
            root=p.parent.resolve(),
            allowed_tools=list_field(allowed, name="allowed-tools", source=str(p)),
            triggers=_words(meta.get("triggers"), str(p)),
            patterns=patterns,
            metadata={k: v for k, v in meta.items() if k not in _OWN},
        )

    def render(self, arguments: str = "") -> str:
        """The instructions with ``$ARGUMENTS`` and ``$1``…``$9`` substituted.

        Args:
            arguments: the arguments of the ``Skill`` call.
        """
        return substitute(self.instructions, arguments)


def _words(value: Any, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(w.strip() for w in value.split(",") if w.strip())
    return list_field(value, name="triggers", source=source)


_POSITIONAL = re.compile(r"\$(ARGUMENTS|[1-9])")


def substitute(text: str, arguments: str) -> str:
    """``$ARGUMENTS`` becomes ``arguments``; ``$1``…``$9`` its shell-style words ("" if absent).

    Text without any placeholder gets the arguments appended (``ARGUMENTS: …``) when there are
    some, so they are never lost.

    Args:
        text: the instructions with placeholders.
        arguments: the arguments to substitute.
    """
    try:
        words = shlex.split(arguments)
    except ValueError:
        words = arguments.split()
    if not _POSITIONAL.search(text):
        return f"{text}\n\nARGUMENTS: {arguments}" if arguments.strip() else text

    def one(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "ARGUMENTS":
            return arguments
        i = int(key) - 1
        return words[i] if i < len(words) else ""

    return _POSITIONAL.sub(one, text)


def discover_skills(
    folders: Iterable[str | Path] | None = None, *, root: str | Path = "."
) -> list[Skill]:
    """The skills in ``folders`` (each a folder of skill folders), sorted by name.

    Args:
        folders: where to look; relative ones are under ``root``. None: the
            :data:`DEFAULT_SKILL_DIRS`. Folders that do not exist are skipped.
        root: the project root.

    Raises:
        UserError: a ``SKILL.md`` that does not parse (naming the file).
    """
    base = Path(root).expanduser()
    found: dict[str, Skill] = {}
    for folder in folders if folders is not None else DEFAULT_SKILL_DIRS:
        p = Path(folder).expanduser()
        if not p.is_absolute():
            p = base / p
        if not p.is_dir():
            continue
        for candidate in sorted(p.iterdir()):
            if (candidate / "SKILL.md").is_file():
                skill = Skill.from_file(candidate)
                found.setdefault(skill.name, skill)
    return sorted(found.values(), key=lambda s: s.name)
