"""Credentials resolved at the first request, not when a model is built.

A model object only records what it was given; its SDK client is built by
:class:`LazyClient` when the first request needs it. So a module-level
``Agent(model="anthropic:…")`` imports with no key set, a key or base URL exported after
import is still seen, and a missing key is reported by the request that needed it.

:func:`resolve` is the one rule every provider applies then: the key is the ``api_key``
argument or the first set key variable; the server is the ``base_url`` argument or the first
set base-URL variable. A base URL alone is enough (a local server or proxy needs no key).
Without either, ``MissingCredentialsError`` names the variables and arguments to set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from dive.errors import MissingCredentialsError

__all__ = ["Credentials", "LazyClient", "resolve"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Credentials:
    """What a request is sent with.

    Attributes:
        key: the API key (None when only a base URL was given).
        base_url: the server chosen by argument or variable (None: the SDK's default).
    """

    key: str | None
    base_url: str | None


def _first(names: Sequence[str]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def resolve(
    *,
    title: str,
    api_key: str | None,
    key_envs: Sequence[str],
    base_url: str | None,
    base_envs: Sequence[str],
    key_required: bool = True,
    alternatives: str = "",
) -> Credentials:
    """The key and server for a request, read now.

    Args:
        title: the provider's name in the error text (``Anthropic``, ``OpenAI``…).
        api_key: the key the model was given, if any.
        key_envs: the variables holding a key, in order.
        base_url: the server the model was given, if any.
        base_envs: the variables naming a server, in order.
        key_required: False for servers that never need a key.
        alternatives: further ways to authenticate, appended to the error text
            (``"; or set ANTHROPIC_AUTH_TOKEN"``).

    Raises:
        MissingCredentialsError: a key is required and neither a key nor a base URL is set.
    """
    key = api_key or _first(key_envs)
    url = base_url or _first(base_envs)
    if not key and url is None and key_required:
        keys = " or ".join(key_envs)
        bases = " or ".join(base_envs)
        raise MissingCredentialsError(
            f"no {title} API key: set {keys}, or {bases} for a server that needs no key; "
            f"or pass api_key=, base_url= or client={alternatives}"
        )
    return Credentials(key=key or None, base_url=url)


class LazyClient:
    """An SDK client built by ``build`` the first time it is needed (or one given ready)."""

    __slots__ = ("_build", "_client")

    def __init__(self, build: Callable[[], Any], client: Any = None) -> None:
        self._build = build
        self._client: Any = client

    def get(self) -> Any:
        """The client, built now if it was not yet (may raise ``MissingCredentialsError``)."""
        if self._client is None:
            self._client = self._build()
        return self._client

    @property
    def built(self) -> Any:
        """The client if it exists, else None (closing a model never builds one)."""
        return self._client
