"""The approval gate: allow, deny (with a message) or ask, per call.

It runs after ``pre_tool_use`` and the permission gate. ``ask`` holds the call *unstarted* and
suspends the turn with a pending call of reason ``approval_required``; resuming with
``ToolApproval(approved=True)`` runs it, ``ToolApproval(approved=False, message=...)`` answers
it ``is_error`` with the message. The default policy asks for ``requires_approval`` tools and
allows the rest; a ``pre_tool_use`` hook may set ``ctx.approved = True`` to let a call through
(or ``False`` to deny it).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from dive.messages import ToolCall
from dive.tools import Tool

__all__ = [
    "DENIED_TEXT",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ToolApproval",
    "allow",
    "ask",
    "decide",
    "default_policy",
    "deny",
]

DENIED_TEXT = "The user declined this tool call; it was not run."


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    """What a policy decided for one call."""

    kind: Literal["allow", "deny", "ask"]
    message: str | None = None


def allow() -> ApprovalDecision:
    """Run the call."""
    return ApprovalDecision(kind="allow")


def deny(message: str | None = None) -> ApprovalDecision:
    """Answer the call ``is_error`` with ``message`` without running it."""
    return ApprovalDecision(kind="deny", message=message)


def ask(prompt: str | None = None) -> ApprovalDecision:
    """Hold the call and suspend the turn until someone approves or denies it."""
    return ApprovalDecision(kind="ask", message=prompt)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApproval:
    """A resume result: approve or deny a call held at the gate (or answer a suspended one)."""

    approved: bool
    message: str | None = None


ApprovalPolicy = Callable[[Tool, ToolCall], "ApprovalDecision | Awaitable[ApprovalDecision]"]


def default_policy(tool: Tool, call: ToolCall) -> ApprovalDecision:
    """Ask for ``requires_approval`` tools, allow the rest."""
    return ask() if tool.definition.requires_approval else allow()


async def decide(
    policy: ApprovalPolicy, tool: Tool, call: ToolCall, hook_approved: bool | None
) -> ApprovalDecision:
    """The gate's decision; an explicit hook verdict wins over the policy."""
    if hook_approved is True:
        return allow()
    if hook_approved is False:
        return deny()
    out = policy(tool, call)
    if inspect.isawaitable(out):
        out = await out
    return out
