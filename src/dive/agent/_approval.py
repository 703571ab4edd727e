"""The approval gate: allow, deny (with a message) or ask, per call.

It runs after ``pre_tool_use`` and the permission gate. ``ask`` holds the call *unstarted* and
suspends the turn with a pending call of reason ``approval_required``; resuming with
``ToolApproval(approved=True)`` runs it, ``ToolApproval(approved=False, message=...)`` answers
it ``is_error`` with the message. The default policy asks for ``requires_approval`` tools and
allows the rest; a ``pre_tool_use`` hook may set ``ctx.approved = True`` to let a call through
(or ``False`` to deny it).

Every decision the gate makes is noted in the call's record (``ToolCallRecord.approvals``,
the turn's audit log) with who made it (``ApprovalDecision.decided_by``: ``hook`` for a
hook's verdict, ``policy`` when the policy does not say) and the rule, if any. A policy that
also wants to learn from a resume (the permission engine's "allow for this session" grants)
implements :class:`ResumeAwarePolicy`: the resume tells it how each call it held was settled.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from dive.messages import ToolCall
from dive.tools import Tool

__all__ = [
    "DENIED_TEXT",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ResumeAwarePolicy",
    "ToolApproval",
    "allow",
    "ask",
    "decide",
    "default_policy",
    "deny",
    "notify_resumed",
]

DENIED_TEXT = "The user declined this tool call; it was not run."


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecision:
    """What a policy decided for one call.

    Attributes:
        kind: ``allow`` runs the call, ``deny`` answers it ``is_error`` with ``message``,
            ``ask`` holds it and suspends the turn (``message`` is the prompt).
        message: the denial text or the prompt (None: the gate's default text).
        decided_by: who decided, for the audit log (``rule``, ``mode``, ``session_grant``,
            ``dialog``, ...); None is recorded as ``policy``.
        rule: the rule that decided, for the audit log, if any.
    """

    kind: Literal["allow", "deny", "ask"]
    message: str | None = None
    decided_by: str | None = None
    rule: str | None = None


def allow() -> ApprovalDecision:
    """Run the call."""
    return ApprovalDecision(kind="allow")


def deny(message: str | None = None) -> ApprovalDecision:
    """Answer the call ``is_error`` with ``message`` without running it.

    Args:
        message: the text the model gets as the call's error result (default: a denial text).
    """
    return ApprovalDecision(kind="deny", message=message)


def ask(prompt: str | None = None) -> ApprovalDecision:
    """Hold the call and suspend the turn until someone approves or denies it.

    Args:
        prompt: what the person is asked (default: names the tool and its arguments).
    """
    return ApprovalDecision(kind="ask", message=prompt)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApproval:
    """A resume result: approve or deny a call held at the gate (or answer a suspended one).

    Attributes:
        approved: run the held call (True) or answer it ``is_error`` (False).
        message: the denial text (None: the default denial text).
        for_session: an "allow for this session" answer: a policy that learns from resumes
            (:class:`ResumeAwarePolicy`, such as the permission engine) allows similar calls
            for the rest of the process without asking again.
    """

    approved: bool
    message: str | None = None
    for_session: bool = False


ApprovalPolicy = Callable[[Tool, ToolCall], "ApprovalDecision | Awaitable[ApprovalDecision]"]


@runtime_checkable
class ResumeAwarePolicy(Protocol):
    """An approval policy that is told how a resume settled each call held at its gate."""

    def resumed(self, tool: Tool, call: ToolCall, approval: ToolApproval) -> object:
        """``approval`` settled ``call`` (held at the gate); may return an awaitable.

        Args:
            tool: the tool of the settled call.
            call: the settled call.
            approval: the answer the resume supplied.
        """
        ...


async def notify_resumed(
    policy: ApprovalPolicy, tool: Tool, call: ToolCall, approval: ToolApproval
) -> None:
    """Tell ``policy`` how a resume settled a held call, if it wants to know."""
    if not isinstance(policy, ResumeAwarePolicy):
        return
    out = policy.resumed(tool, call, approval)
    if inspect.isawaitable(out):
        await out


def default_policy(tool: Tool, call: ToolCall) -> ApprovalDecision:
    """Ask for ``requires_approval`` tools, allow the rest.

    Args:
        tool: the tool being called.
        call: the model's call.
    """
    return ask() if tool.definition.requires_approval else allow()


async def decide(
    policy: ApprovalPolicy, tool: Tool, call: ToolCall, hook_approved: bool | None
) -> ApprovalDecision:
    """The gate's decision; an explicit hook verdict wins over the policy."""
    if hook_approved is True:
        return ApprovalDecision(kind="allow", decided_by="hook")
    if hook_approved is False:
        return ApprovalDecision(kind="deny", decided_by="hook")
    out = policy(tool, call)
    if inspect.isawaitable(out):
        out = await out
    return out
