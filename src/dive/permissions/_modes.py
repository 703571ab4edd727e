"""Permission modes: what happens to a call no rule and no grant decided.

=================  ==========================================================================
mode               a call no rule decided
=================  ==========================================================================
``default``        allowed; asked when its tool is ``requires_approval``
``plan``           read-only tools as in ``default``; every other tool is denied, whatever the
                   allow rules and grants say (plan mode changes nothing). Read-only means
                   ``effect_type="read_only"`` or annotated ``read_only=True``, and not open
                   world: ``WebFetch`` (``external_side_effect``) is denied, since what it
                   is given leaves the machine
``accept_edits``   ``edit`` tools (tag ``edit`` or ``ToolAnnotations(edit=True)``) allowed,
                   even ``requires_approval`` ones; the rest as in ``default``
``bypass``         allowed (ask rules too); only deny rules stop a call. Alias
                   ``bypass_permissions``
``dont_ask``       denied (ask rules too): only allow rules and grants let a call run
=================  ==========================================================================

Settings files may also spell the modes as Claude Code does: ``acceptEdits``,
``bypassPermissions``, ``dontAsk``.
"""

from __future__ import annotations

from typing import Literal, get_args

from dive.agent import ApprovalDecision
from dive.tools import Tool

__all__ = [
    "MODES",
    "PermissionMode",
    "is_edit_tool",
    "is_read_only",
    "mode_default",
    "parse_mode",
    "plan_allows",
    "plan_denial",
]

PermissionMode = Literal["default", "plan", "accept_edits", "bypass", "dont_ask"]
MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)

_ALIASES: dict[str, PermissionMode] = {
    "bypass_permissions": "bypass",
    "bypassPermissions": "bypass",
    "acceptEdits": "accept_edits",
    "dontAsk": "dont_ask",
}


def parse_mode(value: object, where: str) -> PermissionMode:
    """A mode name (aliases accepted) as a ``PermissionMode``; ``ValueError`` otherwise.

    Args:
        value: the mode as given.
        where: what gave it, for the error message.
    """
    if isinstance(value, str):
        if value in MODES:
            return value  # pyright: ignore[reportReturnType]
        if value in _ALIASES:
            return _ALIASES[value]
    accepted = ", ".join([*MODES, *_ALIASES])
    raise ValueError(f"{where}: unknown permission mode {value!r}; use one of {accepted}")


def is_edit_tool(tool: Tool) -> bool:
    """Tagged ``edit`` or annotated ``edit=True``: what ``accept_edits`` allows."""
    return "edit" in tool.definition.tags or bool(tool.annotations.edit)


def is_read_only(tool: Tool) -> bool:
    """``effect_type="read_only"`` or annotated ``read_only=True``: what ``plan`` allows."""
    return tool.definition.read_only or tool.annotations.read_only is True


def plan_allows(tool: Tool) -> bool:
    """Read-only and not open world (not ``external_side_effect``): what ``plan`` runs."""
    return (
        is_read_only(tool)
        and not tool.annotations.open_world
        and tool.definition.effect_type != "external_side_effect"
    )


def plan_denial(tool: Tool) -> ApprovalDecision:
    """The denial of a tool that is not read-only, in plan mode."""
    return ApprovalDecision(
        kind="deny",
        message=(
            f'Plan mode allows only read-only tools that stay on this machine; "{tool.name}" '
            "is not one, so this call was not run. Describe the step in your plan instead."
        ),
        decided_by="mode",
        rule="mode:plan",
    )


def mode_default(mode: PermissionMode, tool: Tool) -> ApprovalDecision:
    """What ``mode`` decides for a call that no rule or grant decided."""
    asks = tool.definition.requires_approval
    rule = f"mode:{mode}"
    if mode == "bypass" or (mode == "accept_edits" and is_edit_tool(tool)):
        return ApprovalDecision(kind="allow", decided_by="mode", rule=rule)
    if mode == "dont_ask":
        return ApprovalDecision(
            kind="deny",
            message=(
                f'No allow rule permits "{tool.name}" and dont_ask mode denies everything '
                "else; this call was not run."
            ),
            decided_by="mode",
            rule=rule,
        )
    if mode == "plan" and not plan_allows(tool):
        return plan_denial(tool)
    return ApprovalDecision(kind="ask" if asks else "allow", decided_by="mode", rule=rule)
