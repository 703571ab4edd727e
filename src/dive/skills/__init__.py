"""Skills: packaged instructions an agent loads when a task calls for them.

A skill is a folder with a ``SKILL.md`` in the agentskills.io format (YAML front matter:
``name``, ``description``, optionally ``allowed-tools``, ``triggers``, ``patterns``; the body is
the instructions) and any files it needs. :class:`SkillLoader` is an extension that finds
skills in ``.dive/skills``, ``.claude/skills``, ``.agents/skills`` and ``~/.dive/skills``,
lists them in the agent's instructions (a stable, cacheable prefix; changes are appended),
loads one on demand through the ``Skill`` tool (``$ARGUMENTS``, ``$1``… substituted) and
reads the files beside it through the toolkit's confined ``Read``. See ``docs/skills.md``.
"""

from dive.skills._frontmatter import list_field, read_front_matter
from dive.skills._loader import ACTIVE_KEY, ReadSkillFile, SkillLoader, SkillTool
from dive.skills._skill import DEFAULT_SKILL_DIRS, Skill, discover_skills, substitute

__all__ = [
    "ACTIVE_KEY",
    "DEFAULT_SKILL_DIRS",
    "ReadSkillFile",
    "Skill",
    "SkillLoader",
    "SkillTool",
    "discover_skills",
    "list_field",
    "read_front_matter",
    "substitute",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
