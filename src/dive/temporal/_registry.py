"""The agents a worker process serves, by name (the workflow finds its agent here).

Workflow code cannot be handed live objects, so ``TemporalAgent.worker()`` registers its
agent under its name and the turn workflow, whose type is derived from that name, looks it
up. The agent's tools and model stay on this process: the workflow only reads definitions
and configuration, and every effect is an activity.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lookup", "register"]

_AGENTS: dict[str, Any] = {}


def register(name: str, owner: Any) -> None:
    """Serve ``owner`` (a ``TemporalAgent``) as ``name`` from now on."""
    _AGENTS[name] = owner


def lookup(name: str) -> Any:
    """The ``TemporalAgent`` registered as ``name``."""
    owner = _AGENTS.get(name)
    if owner is None:
        raise LookupError(
            f"no TemporalAgent named {name!r} is served by this worker process; build its "
            "worker with TemporalAgent(..., name=...).worker(...)"
        )
    return owner
