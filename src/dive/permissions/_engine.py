"""The permission engine: one decision per call, in a fixed order.

1. **Deny rules** — a match refuses the call in every mode (``bypass`` included). For a
   command, a deny rule matches when it matches *any* segment in any reading (see
   ``_shell``); ``Read(...)`` rules also cover the other read-only path tools, and a tree
   search (``Grep``, ``Glob``) is refused when it could read a path a rule matches (see
   ``_reach``).
2. **Plan mode** — a tool that is not read-only is refused.
3. **Protected settings** — an edit under ``<workspace>/.dive``, ``~/.dive`` (or where a
   settings file was loaded from) asks in every mode (``dont_ask`` refuses) unless an allow
   rule or grant *with a path specifier* matches it.
4. **Session grants** and then 5. **allow rules** — a match lets the call run. For a
   command, *every* segment must be matched by a grant or an allow rule, and a command that
   does not parse, or has an opaque segment, is never allowed by a specifier rule.
6. **Ask rules** — a match asks (any segment, like deny). ``bypass`` allows instead,
   ``dont_ask`` denies instead.
7. **The mode's default** (see ``_modes``); ``requires_approval=True`` makes it ``ask`` in
   ``default`` and ``plan`` mode.

Every decision names who made it (``rule``, ``mode``, ``session_grant``) and the rule
(``protected:<dir>`` for the settings), for the audit log. An ``ask`` is settled by a dialog
or by resuming the suspended turn (see ``_policy``). Session grants are held by the engine
object: process-local, never saved.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from dive.agent import ApprovalDecision
from dive.permissions._modes import (
    PermissionMode,
    is_read_only,
    mode_default,
    parse_mode,
    plan_denial,
)
from dive.permissions._rules import Rule, Target, parse_rule
from dive.permissions._settings import PermissionConfig
from dive.permissions._urls import url_hosts
from dive.tools import Tool

__all__ = ["PermissionEngine"]


class PermissionEngine:
    """Decides allow, deny or ask for each call from a :class:`PermissionConfig`.

    Args:
        config: the rules, mode and workspace root.
    """

    def __init__(self, config: PermissionConfig) -> None:
        self._config = config
        self._mode: PermissionMode = config.mode
        self._grants: list[Rule] = []
        self._lock = threading.Lock()

    @property
    def config(self) -> PermissionConfig:
        """The configuration the engine was built from."""
        return self._config

    @property
    def mode(self) -> PermissionMode:
        """The current mode (``set_mode`` changes it)."""
        return self._mode

    def set_mode(self, mode: PermissionMode | str) -> None:
        """Switch mode for the decisions from now on (aliases accepted).

        Args:
            mode: the new mode.
        """
        self._mode = parse_mode(mode, "set_mode()")

    @property
    def grants(self) -> tuple[Rule, ...]:
        """The session grants so far, oldest first."""
        with self._lock:
            return tuple(self._grants)

    def grant_for_session(self, tool: str, pattern: str | None = None) -> Rule:
        """Allow ``tool`` (optionally only calls matching ``pattern``) for this process.

        Args:
            tool: a tool name (or a name pattern, as in rules).
            pattern: a rule specifier such as ``git push:*``, ``./src/**`` or
                ``domain:example.com``; None grants every call of the tool.

        Returns:
            The grant, as a rule (its text is what the audit log names).

        Raises:
            PermissionConfigError: the tool name or pattern is not valid rule syntax.
        """
        text = tool if pattern is None else f"{tool}({pattern})"
        return self._add(parse_rule(text, source="session grant"))

    def _add(self, rule: Rule) -> Rule:
        with self._lock:
            if rule not in self._grants:
                self._grants.append(rule)
        return rule

    def clear_session_grants(self) -> None:
        """Forget every session grant."""
        with self._lock:
            self._grants.clear()

    def grants_for_call(self, tool: Tool, arguments: Mapping[str, Any]) -> tuple[Rule, ...]:
        """Grant what an "allow for this session" answer about this call covers.

        A command grants each of its segments exactly; a command rules cannot read (one that
        does not parse, or has an opaque part such as ``eval`` or ``bash -c``) grants exactly
        its whole text, and a command argument that is not a string grants nothing. A URL
        grants its normalised host (``domain:xn--bcher-kva.de``, ``domain:::1``), or nothing
        when it has no host or one whose encodings disagree; any other call (a path, text,
        or a tool without a specifier) the whole tool. Never raises.

        Args:
            tool: the tool called.
            arguments: the call's arguments.
        """
        target = Target.of(tool, arguments, str(self._config.workspace))
        name = tool.name
        if target.kind == "command":
            shell = target.shell
            if shell is None or target.value is None:
                return ()
            whole = not shell.complete or any(s.opaque for s in shell.segments)
            texts = [target.value] if whole else [s.text for s in shell.segments]
            return tuple(
                self._add(
                    Rule(
                        text=f"{name}({text})",
                        tool=name,
                        specifier=text,
                        source="session grant",
                        exact=True,
                        whole=whole,
                    )
                )
                for text in texts
            )
        if target.kind == "url":
            hosts = url_hosts(target.value, web_only=True) if target.value is not None else None
            if hosts is None or len(hosts) != 1:
                return ()  # no host, or one whose encodings disagree: this call only
            spec = f"domain:{hosts[0]}"  # built from the normalised host, never re-parsed
            return (
                self._add(
                    Rule(text=f"{name}({spec})", tool=name, specifier=spec, source="session grant")
                ),
            )
        return (self.grant_for_session(name),)

    # --- deciding -----------------------------------------------------------------------------

    def decide(self, tool: Tool, arguments: Mapping[str, Any]) -> ApprovalDecision:
        """The decision for one call (never a dialog: an ``ask`` comes back as is).

        Args:
            tool: the tool called.
            arguments: the call's arguments (after any ``pre_tool_use`` rewrite).
        """
        config = self._config
        mode = self._mode
        target = Target.of(tool, arguments, str(config.workspace))
        denial = self._denial(target)
        if denial is not None:
            return denial
        if mode == "plan" and not is_read_only(tool):
            return plan_denial(tool)
        protected = self._protected(tool, target)
        allowed = self._allowed(target, explicit=protected is not None)
        if allowed is not None:
            return allowed
        if protected is not None:
            return _protected_decision(mode, tool, protected)
        asked = self._first(config.ask, target) or self._reaching(config.ask, target)
        if asked is not None:
            if mode in ("bypass", "dont_ask"):
                decision = mode_default(mode, tool)
                return ApprovalDecision(
                    kind=decision.kind,
                    message=decision.message,
                    decided_by="mode",
                    rule=decision.rule,
                )
            return ApprovalDecision(kind="ask", decided_by="rule", rule=asked.text)
        return mode_default(mode, tool)

    def _denial(self, target: Target) -> ApprovalDecision | None:
        """A deny rule's refusal: one matching the call, or one a search reaches into."""
        denied = self._first(self._config.deny, target)
        if denied is not None:
            return ApprovalDecision(
                kind="deny",
                message=(
                    f'Permission denied by rule "{denied.text}"; this call was not run. Do '
                    "not retry it; ask the user if it is needed."
                ),
                decided_by="rule",
                rule=denied.text,
            )
        reached = self._reaching(self._config.deny, target)
        if reached is None:
            return None
        return ApprovalDecision(
            kind="deny",
            message=(
                f'Permission denied by rule "{reached.text}": searching "{target.value}" could '
                "read paths it denies, so this call was not run. Search a narrower path (or "
                "with a glob) that leaves them out."
            ),
            decided_by="rule",
            rule=reached.text,
        )

    def _first(self, rules: Sequence[Rule], target: Target) -> Rule | None:
        """The first rule matching any part of the call (deny and ask reading)."""
        names = target.names()
        for rule in rules:
            if target.kind == "command":
                if not rule.applies_to_command(target):
                    continue
                if rule.bare:
                    return rule
                shell = target.shell
                if shell is not None and any(
                    rule.matches_segment(s, allow=False) for s in shell.segments
                ):
                    return rule
            elif any(rule.matches(target, allow=False, name=n) for n in names):
                return rule
        return None

    def _reaching(self, rules: Sequence[Rule], target: Target) -> Rule | None:
        """The first rule a tree search (``Grep``, ``Glob``) can read paths of."""
        if target.below is None:
            return None
        names = target.names()
        return next((r for r in rules if any(r.reaches(target, name=n) for n in names)), None)

    def _allowed(self, target: Target, *, explicit: bool = False) -> ApprovalDecision | None:
        """Allowed by grants and allow rules (every segment of a command), or None.

        ``explicit``: only rules with a specifier count (a protected path).
        """
        grants = self.grants
        if target.kind == "command":
            return self._allowed_command(target, grants)
        for rules, by in ((grants, "session_grant"), (self._config.allow, "rule")):
            for rule in rules:
                if explicit and rule.bare:
                    continue
                if rule.matches(target, allow=True):
                    return ApprovalDecision(kind="allow", decided_by=by, rule=rule.text)
        return None

    def _protected(self, tool: Tool, target: Target) -> str | None:
        """The settings directory an edit of ``target`` lands in, or None.

        Edits under ``<workspace>/.dive``, ``~/.dive`` and the directory of every settings
        file the configuration was loaded from are protected (as written and as resolved,
        case-insensitively, for case-insensitive file systems).
        """
        if target.kind != "path" or target.path is None or is_read_only(tool):
            return None
        places = [
            os.path.join(str(self._config.workspace), ".dive"),
            os.path.join(os.path.expanduser("~"), ".dive"),
            *(os.path.dirname(source) for source in self._config.sources),
        ]
        views = {target.path.lexical.casefold(), target.path.real.casefold()}
        for place in places:
            for form in {os.path.normpath(place), os.path.realpath(place)}:
                folded = form.casefold()
                if any(v == folded or v.startswith(folded.rstrip("/") + "/") for v in views):
                    return os.path.normpath(place)
        return None

    def _allowed_command(self, target: Target, grants: Sequence[Rule]) -> ApprovalDecision | None:
        """Every segment matched by some grant or allow rule (bare rules match whole calls)."""
        candidates = [
            (rule, by)
            for rules, by in ((grants, "session_grant"), (self._config.allow, "rule"))
            for rule in rules
            if rule.applies_to_command(target)
        ]
        for rule, by in candidates:
            if rule.bare or (rule.whole and rule.specifier == target.value):
                return ApprovalDecision(kind="allow", decided_by=by, rule=rule.text)
        shell = target.shell
        if shell is None or not shell.complete or not shell.segments:
            return None
        used: list[tuple[Rule, str]] = []
        for segment in shell.segments:
            hit = next((c for c in candidates if c[0].matches_segment(segment, allow=True)), None)
            if hit is None:
                return None
            if hit not in used:
                used.append(hit)
        by = "session_grant" if all(b == "session_grant" for _, b in used) else "rule"
        return ApprovalDecision(
            kind="allow", decided_by=by, rule=", ".join(r.text for r, _ in used)
        )


def _protected_decision(mode: PermissionMode, tool: Tool, place: str) -> ApprovalDecision:
    """An edit of the permission settings: it asks in every mode (``dont_ask`` refuses)."""
    rule = f"protected:{place}"
    if mode == "dont_ask":
        return ApprovalDecision(
            kind="deny",
            message=(
                f'"{tool.name}" would change the permission settings in {place}, which always '
                "needs a person's approval, and dont_ask mode refuses what needs one; this call "
                "was not run."
            ),
            decided_by="mode",
            rule=rule,
        )
    return ApprovalDecision(kind="ask", decided_by="mode", rule=rule)
