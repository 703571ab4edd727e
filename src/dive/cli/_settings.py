"""Settings of the command line: flags > environment > project file > user file > default.

The files are the permission engine's (:func:`dive.permissions.settings_files`): the user's
``~/.dive/settings.json``, then the workspace's ``.dive/settings.json`` and
``.dive/settings.local.json``; a later file wins. Besides the engine's ``permissions``
object they may hold these top-level keys, each with its environment variable and flag:

=================  ======================  ====================  ==========================
key                environment             flag                  default
=================  ======================  ====================  ==========================
``model``          ``DIVE_MODEL``          ``--model``           the first provider with
                                                                 credentials, else offline
``systemPrompt``   ``DIVE_SYSTEM_PROMPT``  ``--system-prompt``   dive's coding-agent prompt
``maxTurns``       ``DIVE_MAX_TURNS``      ``--max-turns``       100 model calls per turn
``thinking``       ``DIVE_THINKING``       ``--thinking``        the provider's default
``effort``         ``DIVE_EFFORT``         ``--effort``          the provider's default
``sessionsDb``     ``DIVE_SESSIONS_DB``    ``--db``              ``~/.dive/sessions.db``
``mcpConfig``      ``DIVE_MCP_CONFIG``     ``--mcp-config``      none
``maxRetries``     ``DIVE_MAX_RETRIES``    ``--max-retries``     2
=================  ======================  ====================  ==========================

The permission mode is ``--permission-mode`` > ``DIVE_PERMISSION_MODE`` > the files'
``permissions.defaultMode`` > ``default``; ``--allow`` / ``--deny`` rules are added to the
files' rules. ``--workspace`` > ``DIVE_WORKSPACE`` > the current directory. A relative path
in a file is relative to the folder holding its ``.dive/``. A value of the wrong type is a
usage error naming the file (or variable) and the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from dive.cli._errors import EXIT_USAGE, CliError
from dive.permissions import PermissionConfig, settings_files

__all__ = ["EFFORTS", "THINKING", "CliSettings", "Flags", "resolve_settings"]

THINKING = ("enabled", "adaptive", "disabled")
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max")
_THINKING_ALIASES = {"on": "enabled", "true": "enabled", "off": "disabled", "false": "disabled"}
DEFAULT_MAX_RETRIES = 2

# field → (settings key, environment variable)
_KEYS: dict[str, tuple[str, str]] = {
    "model": ("model", "DIVE_MODEL"),
    "system_prompt": ("systemPrompt", "DIVE_SYSTEM_PROMPT"),
    "max_turns": ("maxTurns", "DIVE_MAX_TURNS"),
    "thinking": ("thinking", "DIVE_THINKING"),
    "effort": ("effort", "DIVE_EFFORT"),
    "db": ("sessionsDb", "DIVE_SESSIONS_DB"),
    "mcp_config": ("mcpConfig", "DIVE_MCP_CONFIG"),
    "max_retries": ("maxRetries", "DIVE_MAX_RETRIES"),
}
_PATHS = frozenset({"db", "mcp_config"})
_INTS = frozenset({"max_turns", "max_retries"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Flags:
    """What the command line was given (None: not given)."""

    model: str | None = None
    workspace: Path | None = None
    permission_mode: str | None = None
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    mcp_config: Path | None = None
    max_turns: int | None = None
    thinking: str | None = None
    effort: str | None = None
    system_prompt: str | None = None
    db: Path | None = None
    max_retries: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CliSettings:
    """The settings a command runs with, every source merged.

    Attributes:
        model: ``provider:model`` (None: pick the first provider with credentials).
        workspace: the folder the tools are confined to.
        permissions: the permission engine's configuration (files, mode and flag rules).
        mcp_config: an MCP servers file (``mcpServers`` JSON), if any.
        max_turns: model calls allowed per turn (None: dive's default).
        thinking: ``enabled``, ``adaptive`` or ``disabled`` (None: the provider's default).
        effort: the reasoning effort (None: the provider's default).
        system_prompt: replaces dive's default instructions when set.
        db: the SQLite sessions file.
        max_retries: retries of a failed model request.
    """

    model: str | None = None
    workspace: Path
    permissions: PermissionConfig
    mcp_config: Path | None = None
    max_turns: int | None = None
    thinking: str | None = None
    effort: str | None = None
    system_prompt: str | None = None
    db: Path
    max_retries: int = DEFAULT_MAX_RETRIES


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"{path}: cannot read the settings file: {exc}", EXIT_USAGE) from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: the settings must be a JSON object", EXIT_USAGE)
    return cast(dict[str, Any], data)


def _check(name: str, value: object, where: str) -> object:
    """``value`` as the type ``name`` takes; a usage error naming ``where`` otherwise."""
    if name in _INTS:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CliError(f"{where} must be a whole number ≥ 0, not {value!r}", EXIT_USAGE)
        return value
    if not isinstance(value, str) or not value.strip():
        raise CliError(f"{where} must be a non-empty string, not {value!r}", EXIT_USAGE)
    if name == "thinking":
        value = _THINKING_ALIASES.get(value.lower(), value.lower())
        if value not in THINKING:
            raise CliError(f"{where} must be one of {', '.join(THINKING)}", EXIT_USAGE)
    if name == "effort" and value not in EFFORTS:
        raise CliError(f"{where} must be one of {', '.join(EFFORTS)}", EXIT_USAGE)
    return value


def _layers(
    flags: Flags, environ: Mapping[str, str], files: list[Path]
) -> dict[str, tuple[object, Callable[[str], Path]]]:
    """Each setting's winning value, with how to resolve a relative path where it came from."""
    chosen: dict[str, tuple[object, Callable[[str], Path]]] = {}
    cwd = Path.cwd()
    for path in files:  # lowest precedence first: later files overwrite
        data = _read_file(path)
        base = path.parent.parent
        for name, (key, _) in _KEYS.items():
            if key in data and data[key] is not None:
                value = _check(name, data[key], f'"{key}" in {path}')
                chosen[name] = (value, lambda p, base=base: base / p)
    for name, (_, env) in _KEYS.items():
        raw = environ.get(env)
        if raw:
            chosen[name] = (_check(name, raw, env), lambda p: cwd / p)
    for name in _KEYS:
        value = getattr(flags, name)
        if value is not None:
            flag = "--" + name.replace("_", "-")
            chosen[name] = (_check(name, str(value), flag), lambda p: cwd / p)
    return chosen


def _workspace(flags: Flags, environ: Mapping[str, str]) -> Path:
    raw = flags.workspace or environ.get("DIVE_WORKSPACE") or "."
    root = Path(raw).expanduser().resolve()
    if not root.is_dir():
        raise CliError(
            f"the workspace {raw} is not a folder; pass an existing one with --workspace",
            EXIT_USAGE,
        )
    return root


def resolve_settings(
    flags: Flags,
    *,
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> CliSettings:
    """Merge flags, environment and settings files (see the module docstring).

    Args:
        flags: what the command line was given.
        environ: the environment (default ``os.environ``).
        home: the folder holding the user's ``.dive/`` (default: the home directory).

    Raises:
        CliError: a value of the wrong type, or a workspace that is not a folder.
        PermissionConfigError: a settings file's permissions are invalid.
    """
    env = os.environ if environ is None else environ
    root = _workspace(flags, env)
    files = list(settings_files(root, home=home))
    chosen = _layers(flags, env, files)
    values: dict[str, Any] = {}
    for name, (value, relative_to) in chosen.items():
        if name in _PATHS:
            path = Path(str(value)).expanduser()
            value = path if path.is_absolute() else relative_to(str(path))
        values[name] = value
    if "db" not in values:
        values["db"] = Path(home if home is not None else Path.home()) / ".dive" / "sessions.db"
    mode = flags.permission_mode or env.get("DIVE_PERMISSION_MODE") or None
    permissions = PermissionConfig.load(
        root, home=home, allow=flags.allow, deny=flags.deny, mode=mode
    )
    return CliSettings(workspace=root, permissions=permissions, **values)
