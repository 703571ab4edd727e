"""Permission rules: ``Tool`` or ``Tool(specifier)``, parsed once, matched per call.

The name part is a tool name; ``*`` in it matches any characters (``mcp__github__*``), and
``mcp__server`` alone covers every tool of that MCP server. ``Tool`` and ``Tool(*)`` match
every call of the tool. A specifier is one of

- ``prefix:*`` — a command (or text) that is ``prefix`` or starts with ``prefix`` and a space
  (``Bash(git status:*)`` matches ``git status`` and ``git status -s``, not ``git statusx``);
- ``domain:host`` — a URL on that host (``domain:*.host`` for its subdomains);
- anything else — a glob, read according to the tool's specifier kind: for ``command`` and
  ``text`` ``*`` matches any characters and a trailing `` *`` also matches nothing
  (``Bash(npm run test *)`` matches ``npm run test`` and ``npm run test unit``); for ``path``
  a segment-safe path glob (see ``_paths``); for ``url`` a URL glob matched part by part
  (see ``_urls``).

``Read`` rules also name every other read-only tool of ``path`` kind when denying or asking
(``Target.names``), ``Edit`` rules every edit tool of ``path`` kind (``Write`` included) for
allowing, denying and asking, and a tree search is judged by what it reads (``Rule.reaches``).

A tool exposes its specifier through two metadata keys of its definition (the toolkit sets
them): :data:`ARGUMENT_KEY` names the input argument and :data:`KIND_KEY` says how to read it
(``command``, ``path``, ``url`` or ``text``). A tool without them matches bare-name rules only.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from dive.permissions._errors import PermissionConfigError
from dive.permissions._modes import is_edit_tool, is_read_only
from dive.permissions._paths import ResolvedPath, glob_regex, path_matches, resolve_path
from dive.permissions._reach import Reach, reaches, search_of
from dive.permissions._shell import Segment, ShellSplit, split_command
from dive.permissions._urls import domain_forms, domain_matches, url_glob_matches, url_hosts
from dive.tools import Tool

__all__ = [
    "ARGUMENT_KEY",
    "KIND_KEY",
    "Rule",
    "SpecifierKind",
    "Target",
    "parse_rule",
]

ARGUMENT_KEY = "dive.permission.argument"
"""Definition metadata key: the input argument holding the specifier value."""
KIND_KEY = "dive.permission.kind"
"""Definition metadata key: how to read it (``command``, ``path``, ``url``, ``text``)."""

SpecifierKind = Literal["command", "path", "url", "text"]
_KINDS: tuple[str, ...] = get_args(SpecifierKind)
_NAME = re.compile(r"[A-Za-z0-9_*-]{1,128}")
_log = logging.getLogger("dive.permissions")
_warned: set[tuple[str, str]] = set()

Form = Literal["any", "exact", "prefix", "domain", "glob"]
_FORMS_FOR: Mapping[SpecifierKind, frozenset[Form]] = {
    "command": frozenset({"exact", "prefix", "glob"}),
    "text": frozenset({"exact", "prefix", "glob"}),
    "path": frozenset({"glob"}),
    "url": frozenset({"domain", "glob"}),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What one call shows the rules: its tool, and its specifier value read by kind.

    Attributes:
        tool: the tool called.
        kind: the tool's specifier kind (None: the tool declares none).
        value: the specifier argument's value (None: absent, or not a string); for a tree
            search, the directory searched.
        root: the workspace root paths resolve against.
        shell: the command split into segments (``command`` kind).
        path: the resolved path (``path`` kind): what allow rules judge.
        also: more resolved paths deny and ask rules look at (``Glob``'s ``path``).
        below: for a tree search (``Grep``, ``Glob``), the glob segments of the paths it
            reads under ``path`` (see ``_reach``); None otherwise.
        reads: a read-only tool of ``path`` kind (``Read`` deny and ask rules apply to it).
        edits: an edit tool of ``path`` kind that is not ``Edit`` (``Write``; ``Edit`` rules
            apply to it).
    """

    tool: Tool
    kind: SpecifierKind | None
    value: str | None
    root: str
    shell: ShellSplit | None = None
    path: ResolvedPath | None = None
    also: tuple[ResolvedPath, ...] = ()
    below: Reach | None = None
    reads: bool = False
    edits: bool = False

    @classmethod
    def of(cls, tool: Tool, arguments: Mapping[str, Any], root: str) -> Target:
        """The target of a call of ``tool`` with ``arguments``."""
        meta = tool.definition.metadata
        kind_text, argument = meta.get(KIND_KEY), meta.get(ARGUMENT_KEY)
        if kind_text not in _KINDS or not argument:
            return cls(tool=tool, kind=None, value=None, root=root)
        kind: SpecifierKind = kind_text  # pyright: ignore[reportAssignmentType]
        reads = kind == "path" and is_read_only(tool)
        edits = (
            kind == "path"
            and not reads
            and tool.name != "Edit"
            and (is_edit_tool(tool) or tool.name == "Write")
        )
        search = search_of(tool.name, argument, arguments) if kind == "path" else None
        if search is not None:
            also = () if search.path is None else (resolve_path(search.path, root),)
            return cls(
                tool=tool,
                kind=kind,
                value=search.directory,
                root=root,
                path=resolve_path(search.directory, root),
                also=also,
                below=search.below,
                reads=reads,
            )
        raw = arguments.get(argument)
        if raw is None and kind == "path":
            raw = "."  # an omitted path (Glob, Grep, ListDirectory) is the working directory
        value = raw if isinstance(raw, str) else None
        if value is None:
            return cls(tool=tool, kind=kind, value=None, root=root, reads=reads, edits=edits)
        if kind == "command":
            return cls(tool=tool, kind=kind, value=value, root=root, shell=split_command(value))
        if kind == "path":
            path = resolve_path(value, root)
            return cls(
                tool=tool, kind=kind, value=value, root=root, path=path, reads=reads, edits=edits
            )
        return cls(tool=tool, kind=kind, value=value, root=root)

    def names(self) -> tuple[str, ...]:
        """The tool names rules about this call may name (``Read`` too for a reading tool)."""
        if self.reads and self.tool.name != "Read":
            return (self.tool.name, "Read")
        return self.allow_names()

    def allow_names(self) -> tuple[str, ...]:
        """The tool names allow rules about this call may name (``Edit`` too for ``Write``)."""
        if self.edits:
            return (self.tool.name, "Edit")
        return (self.tool.name,)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One permission rule, as written and parsed.

    Attributes:
        text: the rule as written (what the audit log names).
        tool: the tool-name pattern.
        specifier: the part in parentheses (None for a bare name or ``(*)``).
        source: where the rule came from (a settings file path, or ``code``).
        exact: the specifier is literal text, not a pattern (the grants of an "allow for
            this session" answer about a command).
        whole: with ``exact``, the specifier is a whole command line, matched as one text
            and never against its parts (the grant for a command rules cannot read).
    """

    text: str
    tool: str
    specifier: str | None = None
    source: str = "code"
    exact: bool = False
    whole: bool = False
    _name: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _form: Form = field(init=False, repr=False, compare=False)
    _domain: tuple[bool, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        server = re.fullmatch(r"mcp__[A-Za-z0-9_-]+?", self.tool)
        pattern = ".*".join(re.escape(p) for p in self.tool.split("*"))
        if server is not None and "__" not in self.tool[5:]:
            pattern += "(?:__.*)?"  # ``mcp__server`` covers the server's tools
        object.__setattr__(self, "_name", re.compile(pattern))
        spec = self.specifier
        form: Form = "any"
        if spec is not None and self.exact:
            form = "exact"
        elif spec is not None:
            form = "prefix" if spec.endswith(":*") else "glob"
            form = "domain" if spec.startswith("domain:") else form
        object.__setattr__(self, "_form", form)
        domain: tuple[bool, tuple[str, ...]] = (False, ())
        if form == "domain" and spec is not None:
            try:
                domain = domain_forms(spec[7:])
            except ValueError:
                pass  # parse_rule rejects it first; a hand-made Rule then matches nothing
        object.__setattr__(self, "_domain", domain)

    @property
    def bare(self) -> bool:
        """True when the rule names a tool without a specifier (it matches every call)."""
        return self._form == "any"

    def names(self, tool: str) -> bool:
        """Whether the rule's name part matches tool name ``tool``.

        Args:
            tool: a tool's name.
        """
        return self._name.fullmatch(tool) is not None

    def _fits(self, target: Target) -> bool:
        """Whether the specifier's form applies to the target's kind (warn once if not)."""
        if target.kind is not None and self._form in _FORMS_FOR[target.kind]:
            return True
        key = (self.text, target.tool.name)
        if key not in _warned:
            _warned.add(key)
            why = (
                "the tool declares no permission metadata (dive.permission.argument / .kind)"
                if target.kind is None
                else f"its specifier is not a {target.kind} specifier"
            )
            _log.warning(
                "permission rule %r (from %s) cannot match %s calls: %s, so only a bare-name "
                "rule applies to them",
                self.text,
                self.source,
                target.tool.name,
                why,
            )
        return False

    def matches(self, target: Target, *, allow: bool, name: str | None = None) -> bool:
        """Whether the rule matches a non-command target (``allow``: the strict reading).

        Args:
            target: the call.
            allow: read the rule as an allow rule (every path view must match).
            name: the tool name to check the rule's name part against (default: the
                target's tool; the engine passes ``Read`` for reading tools).
        """
        if not self.names(name or target.tool.name):
            return False
        if self.bare:
            return True
        if not self._fits(target) or target.value is None:
            return False
        spec = self.specifier
        assert spec is not None
        if target.kind == "path":
            assert target.path is not None
            if allow:
                return path_matches(spec, target.path, target.root, allow=True)
            return any(
                path_matches(spec, p, target.root, allow=False) for p in (target.path, *target.also)
            )
        if target.kind == "url":
            hosts = url_hosts(target.value, web_only=allow)
            if self._form == "domain":
                wildcard, domains = self._domain
                return hosts is not None and domain_matches(wildcard, domains, hosts, allow=allow)
            return (hosts is not None or not allow) and url_glob_matches(
                spec, target.value, allow=allow
            )
        if self._form == "exact":
            return target.value == spec
        if self._form == "prefix":
            return target.value.startswith(spec[:-2])
        return _glob(spec, target.value)

    def reaches(self, target: Target, *, name: str | None = None) -> bool:
        """Whether a tree search (``Grep``, ``Glob``) can read a path this rule matches.

        Args:
            target: the call (a search: ``target.below`` is set).
            name: the tool name to check the rule's name part against, as in ``matches``.
        """
        if target.below is None or target.path is None or not self.names(name or target.tool.name):
            return False
        if self.bare or not self._fits(target) or self.specifier is None:
            return False
        return reaches(self.specifier, target.root, target.path, target.below)

    def matches_segment(self, segment: Segment, *, allow: bool) -> bool:
        """Whether the specifier matches one shell segment (name and kind checked already).

        For allow, the segment's text must match, an opaque segment (``eval``, ``bash -c``,
        ...) never matches and a write to a file needs a rule that mentions ``>``; for deny
        and ask, any of the segment's views may match (quote-removed words, the command
        behind assignments and wrappers).

        Args:
            segment: one simple command of the command line.
            allow: the rule is an allow rule (stricter matching).
        """
        if self.bare:
            return True
        if self.whole:
            return False  # matches a whole command line only (see the engine)
        spec = self.specifier or ""
        if not self.exact:
            spec = " ".join(spec.split())
        if allow:
            if segment.opaque or (segment.writes and ">" not in spec):
                return False
            return _command_matches(self._form, spec, segment.text)
        views = segment.views or (segment.text, segment.bare)
        return any(_command_matches(self._form, spec, v) for v in views)

    def applies_to_command(self, target: Target) -> bool:
        """The rule names this command tool and can read its specifier.

        Args:
            target: what the call shows the rules.
        """
        return self.names(target.tool.name) and (self.bare or self._fits(target))


def _glob(spec: str, value: str) -> bool:
    return glob_regex(spec).fullmatch(value) is not None


def _command_matches(form: Form, spec: str, text: str) -> bool:
    if form == "exact":
        return text == spec
    if form == "prefix":
        prefix = spec[:-2].rstrip()
        return text == prefix or text.startswith(prefix + " ")
    if "*" in spec:
        return _glob(spec, text)
    return text == spec


def _check_specifier(spec: str) -> None:
    if not spec.strip():
        raise ValueError(
            "the specifier in parentheses is empty; write Name or Name(*) for every call"
        )
    if spec.startswith("domain:"):
        domain_forms(spec[7:])  # raises ValueError saying what to write
        return
    body = spec[:-2] if spec.endswith(":*") else spec
    if ":*" in body:
        raise ValueError("':*' marks a prefix and must end the specifier, as in Bash(git log:*)")
    if spec.endswith(":*") and not body.strip():
        raise ValueError("a prefix rule needs text before ':*', as in Bash(git log:*)")


def parse_rule(text: str, *, source: str = "code") -> Rule:
    """Parse a rule such as ``Bash(git status:*)``; raise ``PermissionConfigError`` if invalid.

    Args:
        text: the rule.
        source: where it came from, named in errors and kept on the rule.
    """
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise PermissionConfigError(
            f"{source}: permission rule {text!r} is not a string", source=source, rule=repr(text)
        )
    stripped = text.strip()
    name, sep, rest = stripped.partition("(")
    try:
        if not _NAME.fullmatch(name):
            raise ValueError(
                "a rule starts with a tool name (letters, digits, _ and -, with * as a wildcard), "
                "optionally followed by a specifier in parentheses, as in Bash(git status:*)"
            )
        spec: str | None = None
        if sep:
            if not rest.endswith(")"):
                raise ValueError("the specifier is missing its closing ')'")
            spec = rest[:-1]
            _check_specifier(spec)
            if spec.strip() == "*":
                spec = None
    except ValueError as exc:
        raise PermissionConfigError(
            f"{source}: invalid permission rule {text!r}: {exc}", source=source, rule=text
        ) from None
    return Rule(text=stripped, tool=name, specifier=spec, source=source)
