"""``load_config``: servers from the common ``mcpServers`` JSON file.

The format Claude Code, Claude Desktop and most MCP clients read::

    {"mcpServers": {
        "files": {"command": "python", "args": ["files.py"], "env": {"ROOT": "${HOME}/work"}},
        "api": {"type": "http", "url": "https://x/mcp",
                "headers": {"Authorization": "Bearer ${TOKEN:-dev}"}}}}

``type`` is ``stdio`` (the default when ``command`` is set), ``http`` (also
``streamable-http``/``streamableHttp``) or ``sse``; a server with a ``url`` and no ``type`` is
``http``. Every string expands ``${VAR}`` (an unset variable is an error naming it) and
``${VAR:-default}``. ``cwd`` and ``timeout`` (seconds) are read too; other keys are refused,
so a typo does not silently drop a setting.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from dive.mcp._errors import MCPConfigError
from dive.mcp._names import check_server_name
from dive.mcp._server import MCPServer
from dive.mcp._transports import MCPServerHTTP, MCPServerSSE, MCPServerStdio

__all__ = ["expand", "load_config"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_KEYS = frozenset({"type", "command", "args", "env", "cwd", "timeout"})
_HTTP_KEYS = frozenset({"type", "url", "headers", "timeout"})
_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}


def expand(
    text: str, *, source: str, where: str = "", environ: Mapping[str, str] | None = None
) -> str:
    """``text`` with ``${VAR}`` and ``${VAR:-default}`` replaced from the environment."""
    env = os.environ if environ is None else environ

    def one(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        value = env.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        at = f"{source}: {where}" if where else source
        raise MCPConfigError(
            f"{at}: ${{{name}}} is not set; set it, or write ${{{name}:-default}}",
            source=source,
        )

    return _VAR.sub(one, text)


def _expanded(value: Any, where: str, source: str) -> Any:
    if isinstance(value, str):
        return expand(value, source=source, where=where)
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return [_expanded(v, f"{where}[{i}]", source) for i, v in enumerate(items)]
    if isinstance(value, dict):
        entries = cast("dict[str, Any]", value)
        return {k: _expanded(v, f"{where}.{k}", source) for k, v in entries.items()}
    return value


def _strings(value: Any, what: str, source: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(v, str) for v in cast("dict[str, Any]", value).values()
    ):
        raise MCPConfigError(f"{source}: {what} must be an object of strings", source=source)
    return cast("dict[str, str]", value)


def _timeout(spec: Mapping[str, Any], where: str, source: str) -> float:
    value = spec.get("timeout", 30.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise MCPConfigError(
            f"{source}: {where}.timeout must be a number of seconds > 0", source=source
        )
    return float(value)


def _server(name: str, spec: Any, source: str) -> MCPServer:
    where = f"mcpServers.{name}"
    if not isinstance(spec, dict):
        raise MCPConfigError(f"{source}: {where} must be an object", source=source)
    spec = cast("dict[str, Any]", _expanded(spec, where, source))
    kind = spec.get("type") or ("stdio" if "command" in spec else "http" if "url" in spec else "")
    if kind not in _TYPES:
        raise MCPConfigError(
            f"{source}: {where} needs a 'command' (stdio) or a 'url' (http, sse); "
            f"its type {kind!r} is not one of stdio, http, sse",
            source=source,
        )
    kind = _TYPES[kind]
    allowed = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise MCPConfigError(
            f"{source}: {where} has keys dive does not read for a {kind} server: "
            f"{', '.join(unknown)}",
            source=source,
        )
    timeout = _timeout(spec, where, source)
    if kind == "stdio":
        command, args = spec.get("command"), spec.get("args", [])
        if not isinstance(command, str) or not command:
            raise MCPConfigError(f"{source}: {where}.command must be a string", source=source)
        if not isinstance(args, list) or not all(
            isinstance(a, str) for a in cast("list[Any]", args)
        ):
            raise MCPConfigError(f"{source}: {where}.args must be a list of strings", source=source)
        cwd = spec.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise MCPConfigError(f"{source}: {where}.cwd must be a string", source=source)
        return MCPServerStdio(
            name,
            command,
            cast("list[str]", args),
            env=_strings(spec.get("env"), f"{where}.env", source) or None,
            cwd=cwd,
            timeout=timeout,
        )
    url = spec.get("url")
    if not isinstance(url, str) or not url:
        raise MCPConfigError(f"{source}: {where}.url must be a string", source=source)
    headers = _strings(spec.get("headers"), f"{where}.headers", source)
    cls = MCPServerHTTP if kind == "http" else MCPServerSSE
    return cls(name, url, headers=headers, timeout=timeout)


def load_config(path: str | os.PathLike[str]) -> dict[str, MCPServer]:
    """The servers of an ``mcpServers`` JSON file, by name (none is connected yet).

    Args:
        path: the JSON file.

    Raises:
        MCPConfigError: the file is missing or not JSON, a server is malformed, a name is
            invalid, or a ``${VAR}`` without a default is unset (the message says which).
    """
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MCPConfigError(f"MCP config file {source} does not exist", source=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MCPConfigError(
            f"cannot read MCP config file {source}: {exc}", source=source
        ) from None
    except json.JSONDecodeError as exc:
        raise MCPConfigError(
            f"MCP config file {source} is not JSON: {exc.msg} at line {exc.lineno}",
            source=source,
        ) from None
    root: Any = data
    servers: Any = (
        cast("dict[str, Any]", root).get("mcpServers") if isinstance(root, dict) else None
    )
    if not isinstance(servers, dict):
        raise MCPConfigError(
            f'{source}: expected an object with "mcpServers": {{"<name>": {{...}}}}',
            source=source,
        )
    out: dict[str, MCPServer] = {}
    for name, spec in cast("dict[str, Any]", servers).items():
        check_server_name(name, source=source)
        out[name] = _server(name, spec, source)
    return out
