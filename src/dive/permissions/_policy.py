"""The permission engine as the agent's approval policy, and the dialog that settles asks.

``Agent(approval_policy=permission_policy(config, dialog))`` runs the engine at the loop's
approval gate (after ``pre_tool_use``). Allow and deny go straight back to the gate. An ask
goes to ``dialog`` when there is one: it answers ``allow``, ``deny`` or ``allow_for_session``
(which also grants similar calls for the rest of the process). Without a dialog the ask goes
back to the gate, which holds the call and suspends the turn with reason
``approval_required``; resuming with ``ToolApproval(approved=..., for_session=...)`` settles
it, and the policy hears of it through :meth:`PermissionPolicy.resumed`, so an "allow for
this session" approval becomes a grant here too.

A dialog that raises denies the call (its error is the denial text, and it is logged): a
broken prompt never lets a call through. A grant that cannot be made (a dialog naming an
invalid pattern) is logged and skipped: the call the user allowed still runs, and
:meth:`PermissionPolicy.resumed` never raises.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from dive.agent import ApprovalDecision, ToolApproval
from dive.messages import ToolCall
from dive.permissions._engine import SANDBOX_KEY, PermissionEngine, sandbox_noted
from dive.permissions._modes import PermissionMode
from dive.permissions._rules import ARGUMENT_KEY
from dive.permissions._settings import PermissionConfig
from dive.tools import Tool

__all__ = [
    "ApprovalRequest",
    "Dialog",
    "DialogAnswer",
    "DialogDecision",
    "PermissionPolicy",
    "permission_policy",
]

DialogDecision = Literal["allow", "deny", "allow_for_session"]
_DECISIONS: frozenset[str] = frozenset({"allow", "deny", "allow_for_session"})
_DECLINED = "The user declined this tool call; it was not run."


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """What a dialog is asked: one call the engine would not decide on its own.

    Attributes:
        tool: the tool called.
        call: the call (its arguments as they will run).
        prompt: a one-line question to show.
        asked_by: ``rule`` (an ask rule matched) or ``mode`` (the mode's default asks).
        rule: the ask rule (or ``mode:<mode>``) that asked.
        mode: the engine's mode.
        specifier: the value rules matched (the command, path or URL), if the tool has one.
    """

    tool: Tool
    call: ToolCall
    prompt: str
    asked_by: str
    rule: str | None
    mode: PermissionMode
    specifier: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DialogAnswer:
    """A dialog's answer.

    Attributes:
        decision: ``allow``, ``deny`` or ``allow_for_session``.
        message: the denial text the model sees (deny), or a note for the audit log.
        pattern: for ``allow_for_session``, the grant's specifier (``git push:*``); None
            grants what :meth:`PermissionEngine.grants_for_call` derives from the call.
    """

    decision: DialogDecision
    message: str | None = None
    pattern: str | None = None


Dialog = Callable[
    [ApprovalRequest],
    "Awaitable[DialogAnswer | DialogDecision] | DialogAnswer | DialogDecision",
]
"""An async (or plain) callable answering an :class:`ApprovalRequest`."""


def _specifier(tool: Tool, call: ToolCall) -> str | None:
    argument = tool.definition.metadata.get(ARGUMENT_KEY)
    value: Any = call.arguments.get(argument) if argument else None
    return value if isinstance(value, str) else None


def _prompt(tool: Tool, call: ToolCall, decision: ApprovalDecision) -> str:
    value = _specifier(tool, call)
    if value is not None:
        argument = tool.definition.metadata.get(ARGUMENT_KEY)
        what = f'"{tool.name}" with {argument} {json.dumps(value)[:300]}'
    else:
        what = f'"{tool.name}" with {json.dumps(dict(call.arguments), default=str)[:300]}'
    if decision.message:
        why = decision.message  # the engine said why (an unreadable command, a new domain)
    elif decision.decided_by == "rule":
        why = f'the rule "{decision.rule}" asks first'
    elif decision.rule is not None and decision.rule.startswith("protected:"):
        place = decision.rule.removeprefix("protected:")
        why = f"it changes the permission settings in {place}, which always asks"
    elif tool.definition.requires_approval:
        why = "the tool requires approval"
    else:
        why = "the permission mode asks first"
    if tool.definition.metadata.get(SANDBOX_KEY) == "off" and "sandbox" not in why:
        why += "; it runs without the OS sandbox"
    return f"Allow calling {what}? ({why})"


class PermissionPolicy:
    """An approval policy enforcing a :class:`PermissionEngine`, with an optional dialog.

    Args:
        config: the configuration, or an engine to share (its grants and mode).
        dialog: settles asks; None suspends the turn for them (``approval_required``).
        logger: where dialog failures are logged (default ``dive.permissions``).
    """

    def __init__(
        self,
        config: PermissionConfig | PermissionEngine,
        dialog: Dialog | None = None,
        *,
        logger: logging.Logger | None = None,
    ) -> None:
        self._engine = config if isinstance(config, PermissionEngine) else PermissionEngine(config)
        self._dialog = dialog
        self._log = logger or logging.getLogger("dive.permissions")

    @property
    def engine(self) -> PermissionEngine:
        """The engine (rules, mode, session grants)."""
        return self._engine

    def grant_for_session(self, tool: str, pattern: str | None = None) -> None:
        """Allow ``tool`` (calls matching ``pattern``) for this process; see the engine's.

        Args:
            tool: the tool name.
            pattern: a rule specifier, or None for every call of the tool.
        """
        self._engine.grant_for_session(tool, pattern)

    async def __call__(self, tool: Tool, call: ToolCall) -> ApprovalDecision:
        """The decision for ``call``: the engine's, with an ask settled by the dialog."""
        decision = self._engine.decide(tool, call.arguments)
        if decision.kind != "ask":
            return decision
        prompt = _prompt(tool, call, decision)
        if self._dialog is None:
            return ApprovalDecision(
                kind="ask", message=prompt, decided_by=decision.decided_by, rule=decision.rule
            )
        request = ApprovalRequest(
            tool=tool,
            call=call,
            prompt=prompt,
            asked_by=decision.decided_by or "mode",
            rule=decision.rule,
            mode=self._engine.mode,
            specifier=_specifier(tool, call),
        )
        return await self._ask(request)

    async def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        assert self._dialog is not None
        try:
            out = self._dialog(request)
            answer = await out if inspect.isawaitable(out) else out
            if isinstance(answer, str):
                answer = DialogAnswer(decision=answer)
            if answer.decision not in _DECISIONS:  # pyright: ignore[reportUnnecessaryContains]
                raise ValueError(
                    f"the dialog answered {answer.decision!r}; answer allow, deny or "
                    "allow_for_session"
                )
        except Exception as exc:
            self._log.exception("the permission dialog failed for %s", request.call.id)
            return ApprovalDecision(
                kind="deny",
                message=f"The permission dialog failed ({exc}); this call was not run.",
                decided_by="dialog",
                rule=request.rule,
            )
        if answer.decision == "allow_for_session":
            self._grant(request.tool, request.call, answer.pattern)
        if answer.decision == "deny":
            return ApprovalDecision(
                kind="deny",
                message=answer.message or _DECLINED,
                decided_by="dialog",
                rule=request.rule,
            )
        return sandbox_noted(
            request.tool,
            ApprovalDecision(
                kind="allow", message=answer.message, decided_by="dialog", rule=request.rule
            ),
        )

    def _grant(self, tool: Tool, call: ToolCall, pattern: str | None) -> None:
        """Learn an "allow for this session" grant; a failure is logged, never raised.

        The call itself is allowed either way: a grant that cannot be made must not turn the
        user's allow into a denial (or fail a resume).
        """
        try:
            if pattern is not None:
                self._engine.grant_for_session(tool.name, pattern)
            else:
                self._engine.grants_for_call(tool, call.arguments)
        except Exception:
            self._log.exception(
                "the session grant for call %s (%s) could not be made; the call is allowed "
                "this once",
                call.id,
                tool.name,
            )

    def resumed(self, tool: Tool, call: ToolCall, approval: ToolApproval) -> None:
        """A resume settled a call held at the gate: learn an "allow for this session" grant.

        Never raises: a grant that cannot be made is logged and skipped.

        Args:
            tool: the tool of the settled call.
            call: the settled call.
            approval: the answer the resume supplied.
        """
        if approval.approved and approval.for_session:
            self._grant(tool, call, None)


def permission_policy(
    config: PermissionConfig | PermissionEngine | None = None,
    dialog: Dialog | None = None,
) -> PermissionPolicy:
    """The permission engine as an approval policy for ``Agent(approval_policy=...)``.

    Args:
        config: the rules and mode (an engine to share its grants), or None to load the
            settings files of the current directory (:meth:`PermissionConfig.load`).
        dialog: settles asks; None suspends the turn for them (``approval_required``).
    """
    return PermissionPolicy(config if config is not None else PermissionConfig.load(), dialog)
