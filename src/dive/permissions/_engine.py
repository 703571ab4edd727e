"""The permission engine: one decision per call, in a fixed order.

1. **Deny rules** — a match refuses the call in every mode (``bypass`` included). For a
   command, a deny rule matches when it matches *any* segment in any reading (see
   ``_shell``); ``Read(...)`` rules also cover the other read-only path tools, ``Edit(...)``
   rules ``Write`` and the other edit tools, and a tree search (``Grep``, ``Glob``) is
   refused when it could read a path a rule matches (see ``_reach``).
2. **Plan mode** — a tool that is not read-only, or reaches the outside world (``WebFetch``),
   is refused.
2b. **Unreadable commands** — when a deny rule with a specifier names a command tool and the
   command cannot be read (it does not parse, or a part is opaque), the rule might match what
   it really runs: it asks (``bypass`` and ``dont_ask`` refuse), unless a session grant of
   exactly this command allows it.
3. **Protected settings** — an edit under ``<workspace>/.dive``, ``~/.dive`` (or where a
   settings file was loaded from) asks in every mode (``dont_ask`` refuses) unless an allow
   rule or grant *with a path specifier* matches it.
4. **Session grants** and then 5. **allow rules** — a match lets the call run. For a
   command, *every* segment must be matched by a grant or an allow rule, and a command that
   does not parse, or has an opaque segment, is never allowed by a specifier rule.
   A segment that runs another command through a wrapper (``env``, ``timeout``, ``xargs``,
   ``find -exec``) is allowed only when that command is allowed too.
6. **Ask rules** — a match asks (any segment, like deny). ``bypass`` allows instead,
   ``dont_ask`` denies instead.
7. **The mode's default** (see ``_modes``); ``requires_approval=True`` makes it ``ask`` in
   ``default`` and ``plan`` mode, and so does a URL tool that reaches the outside world
   (``WebFetch``) in ``default`` and ``accept_edits`` mode: it asks per new domain, which an
   allow rule or an "allow for this session" grant of the domain settles.

A tool marked as running outside the OS sandbox (definition metadata ``dive.sandbox`` set to
``off``, as ``Bash(sandbox="off")`` does) gets that noted on every allow decision's message,
so the audit log records it.

Every decision names who made it (``rule``, ``mode``, ``session_grant``) and the rule
(``protected:<dir>`` for the settings), for the audit log. An ``ask`` is settled by a dialog
or by resuming the suspended turn (see ``_policy``). Session grants are held by the engine
object: process-local, never saved.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from dive.agent import ApprovalDecision
from dive.permissions._modes import (
    PermissionMode,
    is_read_only,
    mode_default,
    parse_mode,
    plan_allows,
    plan_denial,
)
from dive.permissions._rules import Rule, Target, parse_rule
from dive.permissions._segments import Segment
from dive.permissions._settings import PermissionConfig
from dive.permissions._urls import url_hosts
from dive.tools import Tool

__all__ = ["SANDBOX_KEY", "SANDBOX_OFF_NOTE", "PermissionEngine", "sandbox_noted"]

SANDBOX_KEY = "dive.sandbox"
"""Definition metadata key: how the tool's commands are confined (``off``: not at all)."""
SANDBOX_OFF_NOTE = "ran without the OS sandbox (sandbox='off')"


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
        return sandbox_noted(tool, self._decide(tool, arguments))

    def _decide(self, tool: Tool, arguments: Mapping[str, Any]) -> ApprovalDecision:
        config = self._config
        mode = self._mode
        target = Target.of(tool, arguments, str(config.workspace))
        denial = self._denial(target)
        if denial is not None:
            return denial
        if mode == "plan" and not plan_allows(tool):
            return plan_denial(tool)
        unreadable = self._unreadable(target, mode)
        if unreadable is not None:
            return unreadable
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
        if target.kind == "url" and mode in ("default", "accept_edits") and _reaches_out(tool):
            return ApprovalDecision(
                kind="ask",
                message=(
                    f'"{tool.name}" reaches a domain no rule or grant allows yet (it asks per '
                    "new domain)"
                ),
                decided_by="mode",
                rule=f"mode:{mode}",
            )
        return mode_default(mode, tool)

    def _unreadable(self, target: Target, mode: PermissionMode) -> ApprovalDecision | None:
        """A command rules cannot read while a deny rule names its tool: ask, or refuse."""
        shell = target.shell
        if target.kind != "command" or shell is None:
            return None
        if shell.complete and not any(s.opaque for s in shell.segments):
            return None
        rule = next(
            (r for r in self._config.deny if not r.bare and r.applies_to_command(target)), None
        )
        if rule is None:
            return None
        if any(g.whole and g.specifier == target.value for g in self.grants):
            return None  # a person allowed exactly this command for the session
        why = (
            f"it cannot be read completely (it does not parse, or runs code its words do not "
            f'show), so the deny rule "{rule.text}" might match what it runs'
        )
        if mode in ("bypass", "dont_ask"):
            return ApprovalDecision(
                kind="deny",
                message=(
                    f"Permission denied: {why}; this call was not run. Write the command "
                    "plainly (no eval, sh -c, variables or globs as command names, aliases), "
                    "or ask the user."
                ),
                decided_by="rule",
                rule=rule.text,
            )
        return ApprovalDecision(kind="ask", message=why, decided_by="rule", rule=rule.text)

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
        names = target.allow_names()
        for rules, by in ((grants, "session_grant"), (self._config.allow, "rule")):
            for rule in rules:
                if explicit and rule.bare:
                    continue
                if any(rule.matches(target, allow=True, name=n) for n in names):
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
            hits = [hit]
            if not hit[0].exact:  # a wrapper's rule does not allow what the wrapper runs
                for run in segment.runs:
                    inner = Segment(text=run, bare=run)
                    found = next(
                        (c for c in candidates if c[0].matches_segment(inner, allow=True)), None
                    )
                    if found is None:
                        return None
                    hits.append(found)
            used.extend(h for h in hits if h not in used)
        by = "session_grant" if all(b == "session_grant" for _, b in used) else "rule"
        return ApprovalDecision(
            kind="allow", decided_by=by, rule=", ".join(r.text for r, _ in used)
        )


def sandbox_noted(tool: Tool, decision: ApprovalDecision) -> ApprovalDecision:
    """An allow for a tool running without the OS sandbox, with that noted in its message."""
    if decision.kind != "allow" or tool.definition.metadata.get(SANDBOX_KEY) != "off":
        return decision
    message = f"{decision.message}; {SANDBOX_OFF_NOTE}" if decision.message else SANDBOX_OFF_NOTE
    return replace(decision, message=message)


def _reaches_out(tool: Tool) -> bool:
    """An open-world tool: what it is given reaches the outside world (``WebFetch``)."""
    return bool(tool.annotations.open_world) or (
        tool.definition.effect_type == "external_side_effect"
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
