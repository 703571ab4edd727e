"""Stable names: the workflow type and activity types of a ``TemporalAgent``.

A ``TemporalAgent``'s ``name`` is compatibility data: Temporal finds a running workflow's code
and its activities by these names, so renaming an agent (or changing this scheme) strands the
workflows started under the old names. A test pins them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Names", "names_for", "names_of_workflow_type"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_PREFIX = "dive."
_WORKFLOW = ".turn"


@dataclass(frozen=True, slots=True)
class Names:
    """The Temporal names derived from one agent name."""

    name: str
    workflow: str
    model: str
    tool: str
    toolset: str
    store: str

    def workflow_id(self, session_id: str) -> str:
        """The id of the workflow running a turn of ``session_id`` (one at a time)."""
        return f"{self.workflow}:{session_id}"


def names_for(name: str) -> Names:
    """The names for ``name``; raises ``ValueError`` for a name Temporal cannot carry."""
    if _NAME.fullmatch(name) is None:
        raise ValueError(
            f"invalid TemporalAgent name {name!r}: use 1-100 characters from "
            "A-Z a-z 0-9 _ . - (starting with a letter or digit)"
        )
    base = f"{_PREFIX}{name}"
    return Names(
        name=name,
        workflow=f"{base}{_WORKFLOW}",
        model=f"{base}.model",
        tool=f"{base}.tool",
        toolset=f"{base}.toolset",
        store=f"{base}.store",
    )


def names_of_workflow_type(workflow_type: str) -> Names:
    """The names of the agent whose workflow type is ``workflow_type``."""
    if not (workflow_type.startswith(_PREFIX) and workflow_type.endswith(_WORKFLOW)):
        raise ValueError(f"{workflow_type!r} is not a dive turn workflow type")
    return names_for(workflow_type[len(_PREFIX) : -len(_WORKFLOW)])
