"""``ModelSettings.mcp_servers``: remote MCP servers a provider connects to itself.

Each entry is a JSON object: ``name`` and ``url`` (``http://`` or ``https://``), optional
``authorization_token`` (sent to the server as a bearer token) and ``allowed_tools`` (the
server's tools the model may use; all when absent). Anthropic's spellings are accepted as
well: ``type: "url"`` and ``tool_configuration: {"allowed_tools": [...], "enabled": ...}``.
:func:`remote_servers` checks every entry once, for every provider, and raises a
``UserError`` naming the field (``mcp_servers[1].url: field required``); each provider maps
the checked records onto its own feature or refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from dive.errors import UserError
from dive.llm import ModelSettings

__all__ = ["RemoteServer", "remote_servers"]

_KEYS = frozenset(
    {"type", "name", "url", "authorization_token", "allowed_tools", "tool_configuration"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteServer:
    """One checked ``mcp_servers`` entry.

    Attributes:
        name: the server's name, unique within the request.
        url: where the provider reaches it.
        authorization_token: the bearer token for the server, if any.
        allowed_tools: the tools the model may use (None: every tool).
        enabled: False when the entry turns the server's tools off.
    """

    name: str
    url: str
    authorization_token: str | None = None
    allowed_tools: tuple[str, ...] | None = None
    enabled: bool = True


def _fail(index: int, key: str, message: str) -> UserError:
    return UserError(f"mcp_servers[{index}].{key}: {message}")


def _text(entry: Mapping[str, Any], index: int, key: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _fail(index, key, f"expected a non-empty string, got {value!r}")
    return value


def _required(entry: Mapping[str, Any], index: int, key: str) -> str:
    value = _text(entry, index, key)
    if value is None:
        raise _fail(index, key, "field required")
    return value


def _names(value: Any, index: int, key: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = cast("Sequence[Any]", value) if isinstance(value, list | tuple) else None
    if items is None or not all(isinstance(v, str) and v for v in items):
        raise _fail(index, key, f"expected a list of tool names, got {value!r}")
    return tuple(cast("Sequence[str]", items))


def _server(entry: Mapping[str, Any], index: int) -> RemoteServer:
    unknown = sorted(k for k in entry if k not in _KEYS)
    if unknown:
        raise _fail(
            index, unknown[0], f"unknown field; expected some of {', '.join(sorted(_KEYS))}"
        )
    if entry.get("type", "url") != "url":
        raise _fail(
            index, "type", f"only 'url' servers can be reached remotely, got {entry['type']!r}"
        )
    name = _required(entry, index, "name")
    url = _required(entry, index, "url")
    if not url.startswith(("https://", "http://")):
        raise _fail(index, "url", f"expected an http:// or https:// URL, got {url!r}")
    allowed = _names(entry.get("allowed_tools"), index, "allowed_tools")
    enabled = True
    config = entry.get("tool_configuration")
    if config is not None:
        if not isinstance(config, Mapping):
            raise _fail(index, "tool_configuration", f"expected an object, got {config!r}")
        conf = cast("Mapping[str, Any]", config)
        enabled = conf.get("enabled", True) is not False
        listed = _names(conf.get("allowed_tools"), index, "tool_configuration.allowed_tools")
        allowed = allowed if listed is None else listed
    token = _text(entry, index, "authorization_token")
    return RemoteServer(
        name=name, url=url, authorization_token=token, allowed_tools=allowed, enabled=enabled
    )


def remote_servers(settings: ModelSettings) -> tuple[RemoteServer, ...]:
    """The checked ``settings.mcp_servers`` (empty when none are set).

    Raises:
        UserError: an entry is not an object, lacks ``name`` or ``url``, has a field of the
            wrong type or an unknown field, or reuses another entry's name.
    """
    out: list[RemoteServer] = []
    for index, entry in enumerate(settings.mcp_servers or ()):
        raw = cast(object, entry)  # JSON from the caller: check the shape at run time
        if not isinstance(raw, Mapping):
            raise UserError(f"mcp_servers[{index}]: expected an object, got {raw!r}")
        server = _server(cast("Mapping[str, Any]", raw), index)
        if any(s.name == server.name for s in out):
            raise _fail(index, "name", f"{server.name!r} is used twice; names must be unique")
        out.append(server)
    return tuple(out)
