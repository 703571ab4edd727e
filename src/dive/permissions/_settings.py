"""Permission configuration: rules and mode, from code and from settings files.

Settings files use Claude Code's shape (other top-level keys are left alone)::

    {"permissions": {"allow": ["Bash(git status:*)"], "deny": ["Read(./.env)"],
                     "ask": ["Bash(git push:*)"], "defaultMode": "acceptEdits"}}

:meth:`PermissionConfig.load` reads, in order of precedence (lowest first), the user file
``~/.dive/settings.json``, the project file ``<root>/.dive/settings.json`` and the local file
``<root>/.dive/settings.local.json`` (for one checkout, usually not committed), then the
rules given in code. Rule lists are concatenated; the mode comes from the most specific
place that sets one (code, then local, project, user), else ``default``. A missing file is
skipped; a file that is not valid JSON, has the wrong shape, an unknown mode or an invalid
rule raises :class:`PermissionConfigError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from dive.permissions._errors import PermissionConfigError
from dive.permissions._modes import PermissionMode, parse_mode
from dive.permissions._rules import Rule, parse_rule

__all__ = ["PermissionConfig", "settings_files"]

_LISTS = ("allow", "deny", "ask")
_KEYS = frozenset({*_LISTS, "defaultMode"})


def _rules(items: Iterable[str | Rule], source: str) -> tuple[Rule, ...]:
    return tuple(r if isinstance(r, Rule) else parse_rule(r, source=source) for r in items)


def _mode(value: object, source: str) -> PermissionMode:
    try:
        return parse_mode(value, source)
    except ValueError as exc:
        raise PermissionConfigError(str(exc), source=source, rule=repr(value)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionConfig:
    """The rules and mode a permission engine enforces.

    Attributes:
        mode: the permission mode (``default``, ``plan``, ``accept_edits``, ``bypass``,
            ``dont_ask``).
        allow: rules that let a call run without asking.
        deny: rules that refuse a call, in every mode.
        ask: rules that ask before a call runs.
        workspace: the root ``./`` path rules resolve against (made absolute).
        sources: the settings files the rules were loaded from, lowest precedence first.
    """

    mode: PermissionMode = "default"
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    workspace: Path = field(default_factory=Path.cwd)
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "workspace", Path(os.path.abspath(self.workspace)))
        object.__setattr__(self, "mode", _mode(self.mode, "PermissionConfig(mode=...)"))

    @classmethod
    def from_rules(
        cls,
        *,
        allow: Sequence[str | Rule] = (),
        deny: Sequence[str | Rule] = (),
        ask: Sequence[str | Rule] = (),
        mode: PermissionMode | str = "default",
        workspace: str | os.PathLike[str] = ".",
    ) -> PermissionConfig:
        """A configuration from rules written in code (no settings files).

        Args:
            allow: allow rules, such as ``"Bash(git status:*)"``.
            deny: deny rules.
            ask: ask rules.
            mode: the mode (aliases such as ``bypass_permissions`` accepted).
            workspace: the root ``./`` path rules resolve against.

        Raises:
            PermissionConfigError: a rule or the mode is invalid.
        """
        return cls(
            mode=_mode(mode, "code"),
            allow=_rules(allow, "code"),
            deny=_rules(deny, "code"),
            ask=_rules(ask, "code"),
            workspace=Path(workspace),
        )

    @classmethod
    def load(
        cls,
        workspace: str | os.PathLike[str] = ".",
        *,
        home: str | os.PathLike[str] | None = None,
        user: bool = True,
        allow: Sequence[str | Rule] = (),
        deny: Sequence[str | Rule] = (),
        ask: Sequence[str | Rule] = (),
        mode: PermissionMode | str | None = None,
    ) -> PermissionConfig:
        """User, project and local settings files merged, then the rules given here.

        Args:
            workspace: the project root (its ``.dive/`` holds the project and local files;
                ``./`` rules resolve against it).
            home: the directory holding the user's ``.dive/settings.json`` (default: the
                home directory).
            user: read the user file at all.
            allow: more allow rules, from code.
            deny: more deny rules, from code.
            ask: more ask rules, from code.
            mode: the mode, overriding every file (None: the files decide).

        Raises:
            PermissionConfigError: a file does not parse or holds an invalid rule or mode.
        """
        root = Path(os.path.abspath(workspace))
        lists: dict[str, list[Rule]] = {k: [] for k in _LISTS}
        chosen: PermissionMode | None = None
        sources: list[str] = []
        for path in settings_files(root, home=home, user=user):
            loaded = _read(path)
            if loaded is None:
                continue
            sources.append(str(path))
            file_mode, rules = loaded
            chosen = file_mode or chosen
            for k in _LISTS:
                lists[k].extend(rules[k])
        lists["allow"].extend(_rules(allow, "code"))
        lists["deny"].extend(_rules(deny, "code"))
        lists["ask"].extend(_rules(ask, "code"))
        if mode is not None:
            chosen = _mode(mode, "code")
        return cls(
            mode=chosen or "default",
            allow=tuple(lists["allow"]),
            deny=tuple(lists["deny"]),
            ask=tuple(lists["ask"]),
            workspace=root,
            sources=tuple(sources),
        )


def settings_files(
    workspace: str | os.PathLike[str],
    *,
    home: str | os.PathLike[str] | None = None,
    user: bool = True,
) -> tuple[Path, ...]:
    """The settings files :meth:`PermissionConfig.load` reads, lowest precedence first.

    Args:
        workspace: the project root.
        home: the directory holding the user's ``.dive/`` (default: the home directory).
        user: include the user file.
    """
    root = Path(workspace)
    files = [root / ".dive" / "settings.json", root / ".dive" / "settings.local.json"]
    if user:
        files.insert(0, Path(home if home is not None else Path.home()) / ".dive" / "settings.json")
    return tuple(files)


def _read(path: Path) -> tuple[PermissionMode | None, Mapping[str, tuple[Rule, ...]]] | None:
    """A settings file's mode and rules; None when the file does not exist."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PermissionConfigError(
            f"{source}: cannot read the settings file: {exc}", source=source
        ) from None
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PermissionConfigError(
            f"{source}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            source=source,
        ) from None
    if not isinstance(data, dict):
        raise PermissionConfigError(f"{source}: the settings must be a JSON object", source=source)
    perms = cast(dict[str, Any], data).get("permissions")
    if perms is None:
        return None, {k: () for k in _LISTS}
    if not isinstance(perms, dict):
        raise PermissionConfigError(
            f'{source}: "permissions" must be an object with allow, deny, ask and defaultMode',
            source=source,
        )
    perms = cast(dict[str, Any], perms)
    unknown = sorted(set(perms) - _KEYS)
    if unknown:
        raise PermissionConfigError(
            f'{source}: unknown key(s) {", ".join(unknown)} in "permissions"; the keys dive '
            "reads are allow, deny, ask and defaultMode",
            source=source,
            rule=unknown[0],
        )
    rules: dict[str, tuple[Rule, ...]] = {}
    for k in _LISTS:
        items: object = perms.get(k, [])
        if not isinstance(items, list):
            raise PermissionConfigError(
                f'{source}: "permissions.{k}" must be a list of rule strings', source=source
            )
        rules[k] = _rules(cast(list[str], items), source)
    mode_value = perms.get("defaultMode")
    return (_mode(mode_value, source) if mode_value is not None else None), rules
