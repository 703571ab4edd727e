"""``SubagentDefinition``: a named agent the ``Agent`` tool can start, and its Markdown form.

A definition file is Markdown with YAML front matter (the format Claude Code uses)::

    ---
    name: reviewer
    description: Reviews a diff for bugs. Use after writing code.
    tools: Read, Grep, Glob          # an allowlist (names or patterns); omit for all
    disallowed-tools: Bash           # removed from whatever the allowlist gives
    model: inherit                   # or "provider:model"
    read-only: true                  # only tools whose effect is read-only
    timeout: 300                     # seconds (default 600)
    max-model-calls: 40
    ---
    You are a careful code reviewer...

The body is the subagent's instructions. ``name`` defaults to the file name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dive.agent import Limits, UsageLimits
from dive.errors import UserError
from dive.llm import Model
from dive.skills import list_field, read_front_matter

__all__ = [
    "DEFAULT_AGENT_DIRS",
    "DEFAULT_TIMEOUT",
    "SubagentDefinition",
    "load_subagents",
]

DEFAULT_TIMEOUT = 600.0
DEFAULT_AGENT_DIRS = (".dive/agents", ".claude/agents", "~/.dive/agents")
"""Where :func:`load_subagents` looks when given no paths (relative to the working directory)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentDefinition:
    """A subagent the ``Agent`` tool can run.

    Attributes:
        name: what the model passes as ``subagent_type``.
        description: when to use it (shown to the parent's model).
        prompt: the subagent's instructions (its system prompt).
        tools: an allowlist of the parent's tool names (``fnmatch`` patterns such as
            ``mcp__github__*``; a permission-rule specifier like ``Bash(git:*)`` counts as
            its tool name). Empty: all of the parent's tools except ``Agent``.
        disallowed_tools: names or patterns removed from what ``tools`` gives.
        read_only: keep only tools whose effect is read-only (``explore``, ``plan``).
        model: a model, ``"provider:model"``, or None / ``"inherit"`` for the parent's.
        limits: the subagent turn's limits (default: ``Limits(response_timeout=timeout)``).
        usage_limits: a token, request or cost budget for each subagent run.
        timeout: seconds a run may take (default 600) when ``limits`` is not given.
        source: the file it was loaded from, if any.
    """

    name: str
    description: str
    prompt: str = ""
    tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    read_only: bool = False
    model: Model | str | None = None
    limits: Limits | None = None
    usage_limits: UsageLimits | None = None
    timeout: float | None = DEFAULT_TIMEOUT
    source: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise UserError(
                f"subagent name {self.name!r} is invalid: use up to 64 letters, digits, '_', "
                "'.' or '-', starting with a letter or digit"
            )
        if not self.description.strip():
            raise UserError(f"subagent {self.name!r} needs a description (when to use it)")
        for field_name in ("tools", "disallowed_tools"):
            value: Any = getattr(self, field_name)
            if isinstance(value, str):
                raise UserError(f"subagent {self.name!r}: {field_name} must be a tuple of names")
            object.__setattr__(self, field_name, tuple(value))
        if self.timeout is not None and not self.timeout > 0:
            raise UserError(f"subagent {self.name!r}: timeout must be > 0 seconds")

    def run_limits(self) -> Limits:
        """The limits a run of this subagent gets."""
        if self.limits is not None:
            return self.limits
        return Limits(response_timeout=self.timeout)

    @classmethod
    def from_markdown(
        cls, text: str, *, source: str = "<text>", name: str | None = None
    ) -> SubagentDefinition:
        """Parse a definition file's text (see the module docstring).

        Args:
            text: the file's text: YAML front matter, then the instructions.
            source: where it came from, for error messages.
            name: the subagent's name when the front matter gives none.

        Raises:
            UserError: the front matter is malformed or misses ``description``.
        """
        meta, body = read_front_matter(text, source=source)
        return cls(**_fields(meta, body, source=source, name=name))

    @classmethod
    def from_file(cls, path: str | Path) -> SubagentDefinition:
        """Load a definition file; its name defaults to the file's stem.

        Args:
            path: the definition file (Markdown with front matter).
        """
        p = Path(path).expanduser()
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read subagent definition {p}: {exc.strerror}") from exc
        return cls.from_markdown(text, source=str(p), name=p.stem)


def _get(meta: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in meta:
            return meta[k]
    return None


def _fields(meta: Mapping[str, Any], body: str, *, source: str, name: str | None) -> dict[str, Any]:
    known = {
        "name", "description", "tools", "disallowed-tools", "disallowedTools",
        "disallowed_tools", "model", "read-only", "read_only", "readOnly", "timeout",
        "max-model-calls", "max_model_calls", "color",
    }  # fmt: skip
    unknown = sorted(set(meta) - known)
    if unknown:
        raise UserError(f"{source}: unknown field(s) {', '.join(unknown)} in the front matter")
    model = _get(meta, "model")
    if model is not None and not isinstance(model, str):
        raise UserError(f"{source}: model must be a string such as anthropic:claude-haiku-4-5")
    out: dict[str, Any] = {
        "name": str(_get(meta, "name") or name or ""),
        "description": str(_get(meta, "description") or ""),
        "prompt": body.strip(),
        "tools": list_field(_get(meta, "tools"), name="tools", source=source),
        "disallowed_tools": list_field(
            _get(meta, "disallowed-tools", "disallowedTools", "disallowed_tools"),
            name="disallowed-tools",
            source=source,
        ),
        "read_only": bool(_get(meta, "read-only", "read_only", "readOnly") or False),
        "model": None if model in (None, "inherit") else model,
        "source": source,
    }
    timeout = _get(meta, "timeout")
    if timeout is not None:
        out["timeout"] = float(timeout)
    calls = _get(meta, "max-model-calls", "max_model_calls")
    if calls is not None:
        out["limits"] = Limits(
            max_model_calls_per_turn=int(calls),
            response_timeout=out.get("timeout", DEFAULT_TIMEOUT),
        )
    return out


def load_subagents(paths: Iterable[str | Path] | None = None) -> dict[str, SubagentDefinition]:
    """Definitions from Markdown files, by name (a later file wins over an earlier one).

    Args:
        paths: files, or directories whose ``*.md`` files are read (sorted). None: the
            :data:`DEFAULT_AGENT_DIRS` that exist.

    Raises:
        UserError: a named file or directory does not exist, or a file does not parse.
    """
    given = paths is not None
    chosen = [Path(p).expanduser() for p in (paths if paths is not None else DEFAULT_AGENT_DIRS)]
    found: dict[str, SubagentDefinition] = {}
    for p in chosen:
        if p.is_dir():
            files = sorted(p.glob("*.md"))
        elif p.is_file():
            files = [p]
        elif given:
            raise UserError(f"no subagent definitions at {p}: not a file or directory")
        else:
            continue
        for f in files:
            d = SubagentDefinition.from_file(f)
            found[d.name] = d
    return found
