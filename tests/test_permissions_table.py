"""The permission engine's decisions as a table: rules, mode and tool → allow / deny / ask.

Each row builds an engine from its rules, mode and session grants, decides one call, and
checks the decision, who made it and the rule it names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dive.permissions import (
    ARGUMENT_KEY,
    KIND_KEY,
    PermissionConfig,
    PermissionEngine,
    PermissionMode,
    SpecifierKind,
)
from dive.tools import FunctionTool, Tool, ToolAnnotations

ROOT = "/nonexistent-dive-workspace/project"


def _tool(
    name: str,
    argument: str | None = None,
    kind: SpecifierKind | None = None,
    *,
    annotations: ToolAnnotations | None = None,
    tags: tuple[str, ...] = (),
    requires_approval: bool = False,
    origin: str = "local",
) -> Tool:
    async def fn(value: str = "") -> str:
        """A fake tool."""
        return value

    meta = {ARGUMENT_KEY: argument, KIND_KEY: kind} if argument and kind else None
    return FunctionTool(
        fn,
        name=name,
        annotations=annotations,
        tags=tags,
        requires_approval=requires_approval,
        metadata=meta,
        origin=origin,
    )


RO = ToolAnnotations(read_only=True)
TOOLS: dict[str, Tool] = {
    "Bash": _tool("Bash", "command", "command", annotations=ToolAnnotations(destructive=True)),
    "Read": _tool("Read", "file_path", "path", annotations=RO),
    "Write": _tool(
        "Write",
        "file_path",
        "path",
        annotations=ToolAnnotations(edit=True, destructive=True),
        tags=("edit",),
    ),
    "Edit": _tool("Edit", "file_path", "path", tags=("edit",)),
    "EditGated": _tool("EditGated", "file_path", "path", tags=("edit",), requires_approval=True),
    "Glob": _tool("Glob", "path", "path", annotations=RO),
    "WebFetch": _tool(
        "WebFetch", "url", "url", annotations=ToolAnnotations(read_only=True, open_world=True)
    ),
    "WebSearch": _tool("WebSearch", "query", "text", annotations=RO),
    "deploy": _tool("deploy", requires_approval=True),
    "lookup": _tool("lookup", annotations=RO, requires_approval=True),
    "Shell": _tool("Shell"),  # no permission metadata: bare-name rules only
    "mcp__github__create_issue": _tool("mcp__github__create_issue", origin="mcp:github"),
    "mcp__github__list_issues": _tool(
        "mcp__github__list_issues", annotations=RO, origin="mcp:github"
    ),
    "mcp__slack__post": _tool("mcp__slack__post", origin="mcp:slack"),
}
ARG = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "EditGated": "file_path",
    "Glob": "path",
    "WebFetch": "url",
    "WebSearch": "query",
}


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    tool: str
    value: str | None
    expect: str
    by: str
    rule: str | None = None
    mode: PermissionMode | str = "default"
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    grants: tuple[tuple[str, str | None], ...] = field(default=())


Case = tuple[Any, ...]


def group(config: dict[str, Any], *cases: Case) -> list[Row]:
    """Rows sharing rules and mode: (id, tool, value, expect, decided_by[, rule])."""
    return [Row(*case, **config) for case in cases]


NO_RULES: dict[str, Any] = {}
GIT: dict[str, Any] = {"mode": "dont_ask", "allow": ("Bash(git status:*)",)}
NO_RM: dict[str, Any] = {"deny": ("Bash(rm:*)",)}
SRC: dict[str, Any] = {"mode": "dont_ask", "allow": ("Read(./src/**)", "Glob(./src/**)")}
EXAMPLE: dict[str, Any] = {"mode": "dont_ask", "allow": ("WebFetch(domain:example.com)",)}
GITHUB: dict[str, Any] = {"mode": "dont_ask", "allow": ("mcp__github__*",)}


def dont_ask(*allow: str) -> dict[str, Any]:
    return {"mode": "dont_ask", "allow": allow}


def mode(name: str, **rules: Any) -> dict[str, Any]:
    return {"mode": name, **rules}


ROWS = [
    # --- every mode, no rules ------------------------------------------------------------------
    *group(NO_RULES, ("default-bash", "Bash", "ls", "allow", "mode", "mode:default")),
    *group(mode("plan"), ("plan-bash", "Bash", "ls", "deny", "mode", "mode:plan")),
    *group(mode("accept_edits"), ("accept-edits-bash", "Bash", "ls", "allow", "mode")),
    *group(mode("bypass"), ("bypass-bash", "Bash", "ls", "allow", "mode", "mode:bypass")),
    *group(
        mode("bypass_permissions"), ("bypass-alias", "Bash", "ls", "allow", "mode", "mode:bypass")
    ),
    *group(mode("dont_ask"), ("dont-ask-bash", "Bash", "ls", "deny", "mode", "mode:dont_ask")),
    *group(NO_RULES, ("default-read", "Read", "a.py", "allow", "mode", "mode:default")),
    *group(mode("dont_ask"), ("dont-ask-read", "Read", "a.py", "deny", "mode", "mode:dont_ask")),
    # --- plan mode: read-only tools only ------------------------------------------------------
    *group(
        mode("plan"),
        ("plan-read", "Read", "a.py", "allow", "mode", "mode:plan"),
        ("plan-webfetch", "WebFetch", "https://x.org", "deny", "mode", "mode:plan"),
        ("plan-mcp-read-only", "mcp__github__list_issues", None, "allow", "mode"),
        ("plan-write", "Write", "a.py", "deny", "mode", "mode:plan"),
        ("plan-deploy", "deploy", None, "deny", "mode", "mode:plan"),
        ("plan-read-only-gated", "lookup", None, "ask", "mode", "mode:plan"),
    ),
    *group(mode("plan", allow=("Write",)), ("plan-beats-allow", "Write", "a.py", "deny", "mode")),
    *group(
        mode("plan", grants=(("Bash", None),)), ("plan-beats-grant", "Bash", "ls", "deny", "mode")
    ),
    # --- accept_edits: edit tools allowed -----------------------------------------------------
    *group(
        mode("accept_edits"),
        ("accept-write", "Write", "a.py", "allow", "mode", "mode:accept_edits"),
        ("accept-edit-tag", "Edit", "a.py", "allow", "mode", "mode:accept_edits"),
        ("accept-edit-gated", "EditGated", "a.py", "allow", "mode", "mode:accept_edits"),
        ("accept-requires-approval", "deploy", None, "ask", "mode", "mode:accept_edits"),
    ),
    *group(
        mode("accept_edits", ask=("Write(./secrets/**)",)),
        ("accept-ask-rule", "Write", "secrets/k", "ask", "rule", "Write(./secrets/**)"),
        ("accept-outside-ask-rule", "Write", "src/k", "allow", "mode"),
    ),
    # --- requires_approval --------------------------------------------------------------------
    *group(
        NO_RULES,
        ("default-requires-approval", "deploy", None, "ask", "mode", "mode:default"),
        ("default-edit-gated", "EditGated", "a.py", "ask", "mode", "mode:default"),
    ),
    *group(mode("bypass"), ("bypass-requires-approval", "deploy", None, "allow", "mode")),
    *group(mode("dont_ask"), ("dont-ask-requires-approval", "deploy", None, "deny", "mode")),
    *group({"allow": ("deploy",)}, ("allow-beats-requires", "deploy", None, "allow", "rule")),
    *group({"allow": ("deploy(*)",)}, ("star-is-bare", "deploy", None, "allow", "rule")),
    *group(
        {"grants": (("deploy", None),)},
        ("grant-beats-requires", "deploy", None, "allow", "session_grant", "deploy"),
    ),
    # --- deny rules are absolute --------------------------------------------------------------
    *group(
        mode("bypass", **NO_RM),
        ("deny-beats-bypass", "Bash", "rm -rf /", "deny", "rule", "Bash(rm:*)"),
        ("deny-any-segment", "Bash", "ls; rm -rf /", "deny", "rule", "Bash(rm:*)"),
        ("deny-env-prefix", "Bash", "FOO=1 rm -rf /", "deny", "rule", "Bash(rm:*)"),
        ("deny-sudo", "Bash", "sudo rm -rf /", "deny", "rule", "Bash(rm:*)"),
        ("deny-dollar-paren", "Bash", "echo $(rm -rf /)", "deny", "rule"),
        ("deny-backticks", "Bash", "echo `rm -rf /`", "deny", "rule"),
        ("deny-bash-c", "Bash", "bash -c 'ls && rm -rf /'", "deny", "rule"),
        ("deny-unparseable", "Bash", 'rm -rf / "', "deny", "rule"),
        ("deny-quoted-is-text", "Bash", "echo 'rm -rf /'", "allow", "mode"),
        ("deny-word-boundary", "Bash", "rmdir x", "allow", "mode"),
    ),
    *group(mode("bypass", deny=("Bash",)), ("deny-bare", "Bash", "ls", "deny", "rule", "Bash")),
    *group({"allow": ("Bash",), **NO_RM}, ("deny-beats-allow", "Bash", "rm x", "deny", "rule")),
    *group(
        {"grants": (("Bash", None),), **NO_RM},
        ("deny-beats-grant", "Bash", "rm x", "deny", "rule", "Bash(rm:*)"),
    ),
    # --- allow rules and shell commands (dont_ask: only allow rules let a call run) -----------
    *group(
        GIT,
        ("git-status", "Bash", "git status", "allow", "rule", "Bash(git status:*)"),
        ("git-status-spaces", "Bash", "git  status   -s", "allow", "rule"),
        ("git-statusx", "Bash", "git statusx", "deny", "mode"),
        ("git-status-and-rm", "Bash", "git status && rm -rf /", "deny", "mode"),
        ("git-status-or-rm", "Bash", "git status || rm -rf /", "deny", "mode"),
        ("git-status-bg-rm", "Bash", "git status & rm -rf /", "deny", "mode"),
        ("git-status-subst", "Bash", "git status $(rm -rf /)", "deny", "mode"),
        ("redirect-write", "Bash", "git status > out.txt", "deny", "mode"),
        ("redirect-null", "Bash", "git status > /dev/null", "allow", "rule"),
        ("redirect-fd", "Bash", "git status 2>&1", "allow", "rule"),
        ("assignment-prefix", "Bash", "LD_PRELOAD=x.so git status", "deny", "mode"),
        ("unparseable-prefix", "Bash", 'git status "', "deny", "mode"),
    ),
    *group(
        dont_ask("Bash(git status:*)", "Bash(grep:*)"),
        (
            "pipe",
            "Bash",
            "git status | grep x",
            "allow",
            "rule",
            "Bash(git status:*), Bash(grep:*)",
        ),
    ),
    *group(
        dont_ask("Bash(npm run test *)"),
        ("glob-args", "Bash", "npm run test unit", "allow", "rule", "Bash(npm run test *)"),
        ("glob-no-args", "Bash", "npm run test", "allow", "rule"),
        ("glob-word", "Bash", "npm run testing", "deny", "mode"),
    ),
    *group(
        dont_ask("Bash(make)"),
        ("exact", "Bash", "make", "allow", "rule", "Bash(make)"),
        ("exact-more", "Bash", "make install", "deny", "mode"),
    ),
    *group(dont_ask("Bash(echo:*)"), ("quoted-op", "Bash", 'echo "a && b"', "allow", "rule")),
    *group(dont_ask("Bash"), ("unparseable-bare", "Bash", 'git status "', "allow", "rule", "Bash")),
    # --- ask rules ----------------------------------------------------------------------------
    *group(
        {"ask": ("Bash(git push:*)",)},
        ("ask-rule", "Bash", "git push", "ask", "rule", "Bash(git push:*)"),
        ("ask-other", "Bash", "git pull", "allow", "mode", "mode:default"),
    ),
    *group({"ask": ("Bash(echo:*)",)}, ("ask-unparseable", "Bash", "echo 'x", "ask", "rule")),
    *group(
        {"allow": ("Bash(git status:*)",), "ask": ("Bash(git push:*)",)},
        ("ask-any-segment", "Bash", "git status && git push", "ask", "rule", "Bash(git push:*)"),
    ),
    *group(
        {"allow": ("Bash(git:*)",), "ask": ("Bash(git push:*)",)},
        ("allow-before-ask", "Bash", "git push", "allow", "rule", "Bash(git:*)"),
    ),
    *group(
        mode("bypass", ask=("Bash(git push:*)",)),
        ("bypass-ask-rule", "Bash", "git push", "allow", "mode", "mode:bypass"),
    ),
    *group(
        mode("dont_ask", ask=("Bash(git push:*)",)),
        ("dont-ask-ask-rule", "Bash", "git push", "deny", "mode", "mode:dont_ask"),
    ),
    *group(
        {"ask": ("Bash(git push:*)",), "grants": (("Bash", "git push:*"),)},
        ("grant-before-ask", "Bash", "git push", "allow", "session_grant", "Bash(git push:*)"),
    ),
    # --- session grants -----------------------------------------------------------------------
    *group(
        mode("dont_ask", grants=(("Bash", "git push:*"),)),
        ("grant-prefix", "Bash", "git push origin", "allow", "session_grant"),
        ("grant-other", "Bash", "git pull", "deny", "mode"),
    ),
    *group(
        {**GIT, "grants": (("Bash", "git push:*"),)},
        ("grant-and-rule", "Bash", "git status && git push", "allow", "rule"),
    ),
    *group(
        mode("dont_ask", grants=(("Read", "./docs/**"),)),
        ("grant-path", "Read", "docs/x.md", "allow", "session_grant", "Read(./docs/**)"),
    ),
    # --- path specifiers ----------------------------------------------------------------------
    *group(
        SRC,
        ("path-in", "Read", "src/a.py", "allow", "rule", "Read(./src/**)"),
        ("path-deep", "Read", "src/a/b/c.py", "allow", "rule"),
        ("path-dir-itself", "Glob", "src", "allow", "rule", "Glob(./src/**)"),
        ("path-absolute", "Read", f"{ROOT}/src/x.py", "allow", "rule"),
        ("path-escape", "Read", "src/../../etc/passwd", "deny", "mode"),
        ("path-dotdot-inside", "Read", "src/../src/a.py", "deny", "mode"),
        ("path-sibling-prefix", "Read", "src2/a.py", "deny", "mode"),
        ("path-omitted-is-root", "Glob", None, "deny", "mode"),
    ),
    *group(
        dont_ask("Read(./src/*)"),
        ("path-star-one-segment", "Read", "src/a/b.py", "deny", "mode"),
        ("path-star-ok", "Read", "src/b.py", "allow", "rule"),
    ),
    *group(
        dont_ask("Edit(*.py)"),
        ("path-any-depth", "Edit", "pkg/mod/x.py", "allow", "rule", "Edit(*.py)"),
        ("path-any-depth-other", "Edit", "x.txt", "deny", "mode"),
        ("path-any-depth-outside", "Edit", "/etc/x.py", "deny", "mode"),
    ),
    *group(
        mode("bypass", deny=("Read(./.env)", "Read(./secrets/**)")),
        ("path-deny-env", "Read", ".env", "deny", "rule", "Read(./.env)"),
        ("path-deny-normalized", "Read", "src/../secrets/k", "deny", "rule", "Read(./secrets/**)"),
    ),
    *group(dont_ask("Read(~/notes/**)"), ("path-home", "Read", "~/notes/a.md", "allow", "rule")),
    *group(dont_ask("Glob(./**)"), ("path-omitted-root", "Glob", None, "allow", "rule")),
    # --- URL specifiers -----------------------------------------------------------------------
    *group(
        EXAMPLE,
        ("url-domain", "WebFetch", "https://example.com/a", "allow", "rule"),
        ("url-subdomain", "WebFetch", "https://docs.example.com/", "deny", "mode"),
        ("url-lookalike", "WebFetch", "https://example.com.evil.net/", "deny", "mode"),
        ("url-userinfo", "WebFetch", "https://example.com@evil.net/", "deny", "mode"),
        ("url-not-web", "WebFetch", "ftp://example.com/", "deny", "mode"),
    ),
    *group(
        dont_ask("WebFetch(domain:*.example.com)"),
        ("url-wildcard", "WebFetch", "https://docs.example.com/", "allow", "rule"),
        ("url-wildcard-apex", "WebFetch", "https://example.com/", "deny", "mode"),
    ),
    *group(
        mode("bypass", deny=("WebFetch(domain:evil.net)",)),
        ("url-deny-bypass", "WebFetch", "http://EVIL.net:8080/x", "deny", "rule"),
    ),
    *group(
        dont_ask("WebFetch(https://x.org/docs/*)"),
        ("url-glob", "WebFetch", "https://x.org/docs/a", "allow", "rule"),
    ),
    # --- text specifiers ----------------------------------------------------------------------
    *group(
        dont_ask("WebSearch(python *)"),
        ("text-glob", "WebSearch", "python asyncio", "allow", "rule", "WebSearch(python *)"),
        ("text-other", "WebSearch", "rust", "deny", "mode"),
    ),
    # --- MCP names ----------------------------------------------------------------------------
    *group(
        GITHUB,
        ("mcp-wildcard", "mcp__github__create_issue", None, "allow", "rule", "mcp__github__*"),
        ("mcp-other-server", "mcp__slack__post", None, "deny", "mode"),
    ),
    *group(
        dont_ask("mcp__github"),
        ("mcp-server", "mcp__github__list_issues", None, "allow", "rule", "mcp__github"),
    ),
    *group(dont_ask("mcp__git"), ("mcp-prefix", "mcp__github__list_issues", None, "deny", "mode")),
    *group(
        mode("bypass", deny=("mcp__github__create_issue",)),
        ("mcp-deny-bypass", "mcp__github__create_issue", None, "deny", "rule"),
    ),
    *group({"ask": ("mcp__slack__post",)}, ("mcp-ask", "mcp__slack__post", None, "ask", "rule")),
    # --- hosts as the fetcher reaches them (regression: urlsplit's host was compared) -------
    *group(
        mode("bypass", deny=("WebFetch(domain:evil.com)",)),
        ("host-ideographic-dot", "WebFetch", "https://evil\u3002com/", "deny", "rule"),
        ("host-fullwidth", "WebFetch", "https://EVIL\uff0eCOM/", "deny", "rule"),
        ("host-halfwidth-dot", "WebFetch", "https://evil\uff61com/", "deny", "rule"),
        ("host-fullwidth-letters", "WebFetch", "https://\uff45vil.com/", "deny", "rule"),
        ("host-trailing-dot", "WebFetch", "https://evil.com./", "deny", "rule"),
        ("host-other", "WebFetch", "https://evil.co/", "allow", "mode"),
    ),
    *group(
        dont_ask("WebFetch(domain:xn--bcher-kva.de)"),
        ("host-idn-url", "WebFetch", "https://b\u00fccher.de/", "allow", "rule"),
        ("host-idn-upper", "WebFetch", "https://B\u00dcCHER.de/", "allow", "rule"),
    ),
    *group(
        dont_ask("WebFetch(domain:b\u00fccher.de)", "WebFetch(domain:[::1])"),
        ("host-idn-rule", "WebFetch", "https://xn--bcher-kva.de/x", "allow", "rule"),
        ("host-ipv6-rule", "WebFetch", "http://[0::1]:8080/", "allow", "rule"),
    ),
    *group(
        dont_ask("WebFetch(domain:strasse.de)"),
        ("host-ambiguous-allow", "WebFetch", "https://stra\u00dfe.de/", "deny", "mode"),
        ("host-unencodable", "WebFetch", "https://a\u0300\u200d.de/", "deny", "mode"),
    ),
    *group(
        mode("bypass", deny=("WebFetch(domain:strasse.de)", "WebFetch(domain:127.0.0.1)")),
        ("host-ambiguous-deny", "WebFetch", "https://stra\u00dfe.de/", "deny", "rule"),
        ("host-numeric", "WebFetch", "http://2130706433/", "deny", "rule"),
        ("host-short-ipv4", "WebFetch", "http://127.1:8000/", "deny", "rule"),
    ),
    *group(
        mode("bypass", deny=("WebFetch(domain:xn--a-0hc.com)",)),
        ("host-idna2003-refuses", "WebFetch", "https://a\u05d0.com/", "deny", "rule"),
    ),
    # --- URL globs: the host is matched on its own (regression: * crossed into the path) --
    *group(
        dont_ask("WebFetch(https://*.example.com/*)"),
        ("glob-subdomain", "WebFetch", "https://docs.example.com/a", "allow", "rule"),
        ("glob-upper", "WebFetch", "https://DOCS.EXAMPLE.COM/a", "allow", "rule"),
        ("glob-default-port", "WebFetch", "https://docs.example.com:443/a", "allow", "rule"),
        ("glob-host-in-path", "WebFetch", "https://evil.com/a.example.com/", "deny", "mode"),
        ("glob-host-in-path2", "WebFetch", "https://evil.com/.example.com/x", "deny", "mode"),
        ("glob-userinfo", "WebFetch", "https://a.example.com@evil.com/", "deny", "mode"),
        ("glob-fragment", "WebFetch", "https://evil.com#.example.com/", "deny", "mode"),
        ("glob-query", "WebFetch", "https://evil.com?.example.com/", "deny", "mode"),
        ("glob-other-port", "WebFetch", "https://docs.example.com:8443/a", "deny", "mode"),
        ("glob-scheme", "WebFetch", "http://docs.example.com/a", "deny", "mode"),
        ("glob-idn-dot", "WebFetch", "https://docs.example\u3002com/a", "allow", "rule"),
    ),
    *group(
        mode("bypass", deny=("WebFetch(https://*.evil.com/*)",)),
        ("glob-deny-dot", "WebFetch", "https://x.evil\uff0ecom/a", "deny", "rule"),
    ),
    # --- tools without permission metadata ----------------------------------------------------
    *group(dont_ask("Shell(ls:*)"), ("no-meta-specifier", "Shell", "ls", "deny", "mode")),
    *group(dont_ask("Shell"), ("no-meta-bare", "Shell", "ls", "allow", "rule", "Shell")),
    *group(
        mode("bypass", deny=("Shell(rm:*)",)),
        ("no-meta-deny-specifier", "Shell", "rm -rf /", "allow", "mode"),
    ),
]


def _engine(row: Row) -> PermissionEngine:
    config = PermissionConfig.from_rules(
        allow=row.allow, deny=row.deny, ask=row.ask, mode=row.mode, workspace=ROOT
    )
    engine = PermissionEngine(config)
    for tool, pattern in row.grants:
        engine.grant_for_session(tool, pattern)
    return engine


def _arguments(row: Row) -> Mapping[str, Any]:
    argument = ARG.get(row.tool, "value")
    return {} if row.value is None else {argument: row.value}


def test_the_table_is_big_and_covers_every_mode() -> None:
    assert len(ROWS) >= 60
    assert len({row.id for row in ROWS}) == len(ROWS)
    modes = {PermissionConfig.from_rules(mode=row.mode).mode for row in ROWS}
    assert modes == {"default", "plan", "accept_edits", "bypass", "dont_ask"}
    assert {row.expect for row in ROWS} == {"allow", "deny", "ask"}
    assert {row.by for row in ROWS} == {"rule", "mode", "session_grant"}


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_decision(row: Row, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/nonexistent-dive-home")
    if row.value is not None and row.value.startswith("~"):
        assert os.path.expanduser("~") == "/nonexistent-dive-home"
    decision = _engine(row).decide(TOOLS[row.tool], _arguments(row))
    assert (decision.kind, decision.decided_by) == (row.expect, row.by)
    if row.rule is not None:
        assert decision.rule == row.rule
    if decision.kind == "deny":
        assert decision.message


def test_set_mode_changes_later_decisions() -> None:
    engine = PermissionEngine(PermissionConfig.from_rules(workspace=ROOT))
    bash = TOOLS["Bash"]
    assert engine.decide(bash, {"command": "ls"}).kind == "allow"
    engine.set_mode("plan")
    assert engine.mode == "plan"
    assert engine.decide(bash, {"command": "ls"}).kind == "deny"
    engine.set_mode("dontAsk")
    assert engine.mode == "dont_ask"
    with pytest.raises(ValueError, match="unknown permission mode 'nope'"):
        engine.set_mode("nope")


def test_grants_for_a_call_follow_its_kind() -> None:
    engine = PermissionEngine(PermissionConfig.from_rules(workspace=ROOT, mode="dont_ask"))
    grants = engine.grants_for_call(TOOLS["Bash"], {"command": "ls *.py | wc -l"})
    assert [(g.text, g.exact) for g in grants] == [("Bash(ls *.py)", True), ("Bash(wc -l)", True)]
    assert engine.decide(TOOLS["Bash"], {"command": "wc -l"}).kind == "allow"
    assert engine.decide(TOOLS["Bash"], {"command": "ls a.py"}).kind == "deny"  # exact, not a glob
    [url] = engine.grants_for_call(TOOLS["WebFetch"], {"url": "https://Docs.Example.com/a"})
    assert url.text == "WebFetch(domain:docs.example.com)"
    [path] = engine.grants_for_call(TOOLS["Write"], {"file_path": "a.py"})
    assert path.text == "Write"
    assert engine.decide(TOOLS["Write"], {"file_path": "/anywhere"}).decided_by == "session_grant"
    engine.grant_for_session("Write")
    assert [g.text for g in engine.grants].count("Write") == 1
    engine.clear_session_grants()
    assert engine.grants == ()


def test_a_deny_rule_whose_specifier_cannot_apply_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = PermissionEngine(
        PermissionConfig.from_rules(deny=["Read(domain:example.com)"], workspace=ROOT)
    )
    for _ in range(2):
        assert engine.decide(TOOLS["Read"], {"file_path": "a"}).kind == "allow"
    warnings = [r for r in caplog.records if "cannot match Read calls" in r.getMessage()]
    assert len(warnings) == 1


def test_paths_through_symlinks_are_judged_where_they_lead(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "secrets").mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "src" / "out").symlink_to(outside)
    (root / "src" / "keys").symlink_to(root / "secrets")
    config = PermissionConfig.from_rules(
        allow=["Read(./src/**)"], deny=["Read(./secrets/**)"], mode="dont_ask", workspace=root
    )
    engine = PermissionEngine(config)
    read = TOOLS["Read"]
    assert engine.decide(read, {"file_path": "src/a.py"}).kind == "allow"
    escaped = engine.decide(read, {"file_path": "src/out/x"})
    assert (escaped.kind, escaped.decided_by) == ("deny", "mode")  # leads outside: not allowed
    hidden = engine.decide(read, {"file_path": "src/keys/k"})
    assert (hidden.kind, hidden.rule) == ("deny", "Read(./secrets/**)")  # leads into a denied dir


# --- regressions from the security review -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["echo 'unterminated", "cat <<EOF\nit's\n", "bash -c 'git status'", "eval ls", "$CMD x"],
)
def test_allow_for_session_on_a_command_rules_cannot_read_grants_only_that_command(
    command: str,
) -> None:
    """Regression: it granted bare ``Bash`` (every command, ask rules overridden)."""
    engine = PermissionEngine(PermissionConfig.from_rules(workspace=ROOT, ask=["Bash"]))
    bash = TOOLS["Bash"]
    [grant] = engine.grants_for_call(bash, {"command": command})
    assert (grant.text, grant.specifier, grant.exact) == (f"Bash({command})", command, True)
    decision = engine.decide(bash, {"command": command})
    assert (decision.kind, decision.decided_by, decision.rule) == (
        "allow",
        "session_grant",
        grant.text,
    )
    for other in ("rm -rf /", command + "; rm -rf /", command.split(" ")[0]):
        assert engine.decide(bash, {"command": other}).kind == "ask", other


def test_allow_for_session_on_a_command_without_a_string_grants_nothing() -> None:
    engine = PermissionEngine(PermissionConfig.from_rules(workspace=ROOT))
    assert engine.grants_for_call(TOOLS["Bash"], {"command": 42}) == ()
    assert engine.grants_for_call(TOOLS["Bash"], {}) == ()
    assert engine.grants == ()


def test_allow_for_session_on_a_url_grants_its_normalised_host() -> None:
    """Regression: an IPv6 or IDN host failed the rule syntax and the grant raised."""
    engine = PermissionEngine(PermissionConfig.from_rules(workspace=ROOT, mode="dont_ask"))
    fetch = TOOLS["WebFetch"]
    [ipv6] = engine.grants_for_call(fetch, {"url": "http://[::1]:8080/x"})
    assert ipv6.text == "WebFetch(domain:::1)"
    assert engine.decide(fetch, {"url": "http://[0:0::1]/y"}).decided_by == "session_grant"
    [idn] = engine.grants_for_call(fetch, {"url": "https://B\u00fccher.de/"})
    assert idn.text == "WebFetch(domain:xn--bcher-kva.de)"
    assert engine.decide(fetch, {"url": "https://xn--bcher-kva.de/"}).kind == "allow"
    assert engine.grants_for_call(fetch, {"url": "https://stra\u00dfe.de/"}) == ()
    assert engine.grants_for_call(fetch, {"url": "file:///etc/passwd"}) == ()
    assert engine.decide(fetch, {"url": "https://example.org/"}).kind == "deny"


@pytest.mark.parametrize(
    "rule", ["WebFetch(domain:::1)", "WebFetch(domain:[::1])", "WebFetch(domain:*.b\u00fccher.de)"]
)
def test_ip_literal_and_international_domain_rules_parse(rule: str) -> None:
    PermissionConfig.from_rules(allow=[rule])


# --- searches reach what they search (regression: Grep(path=".") read a denied .env) ---------

SEARCH_TOOLS: dict[str, Tool] = {
    "Grep": _tool("Grep", "path", "path", annotations=RO),
    "Glob": _tool("Glob", "pattern", "path", annotations=RO),  # the toolkit's metadata
    "ListDirectory": _tool("ListDirectory", "path", "path", annotations=RO),
}
SECRETS = ("Read(./.env)", "Grep(./secrets/**)", "Glob(./secrets/**)")


@pytest.mark.parametrize(
    ("tool", "arguments", "deny", "expect", "rule"),
    [
        ("Grep", {"pattern": "KEY", "path": "."}, SECRETS, "deny", "Read(./.env)"),
        ("Grep", {"pattern": "KEY"}, SECRETS, "deny", "Read(./.env)"),
        ("Grep", {"pattern": "KEY", "path": ".."}, SECRETS, "deny", "Read(./.env)"),
        ("Grep", {"pattern": "KEY", "path": "/"}, SECRETS, "deny", "Read(./.env)"),
        ("Grep", {"pattern": "KEY", "path": ".env"}, SECRETS, "deny", "Read(./.env)"),
        ("Grep", {"pattern": "KEY", "path": "secrets/a"}, SECRETS, "deny", "Grep(./secrets/**)"),
        ("Grep", {"pattern": "KEY", "path": "src"}, SECRETS, "allow", None),
        ("Grep", {"pattern": "K", "path": ".", "glob": "*.py"}, ("Read(./.env)",), "allow", None),
        ("Grep", {"pattern": "K", "path": ".", "glob": ".e*"}, ("Read(./.env)",), "deny", None),
        ("Grep", {"pattern": "K", "path": ".", "glob": "!*.py"}, ("Read(./.env)",), "deny", None),
        ("Grep", {"pattern": "K", "glob": "**/.env"}, ("Read(./.env)",), "deny", None),
        ("Grep", {"pattern": "K", "path": "src"}, ("Read(.env)",), "deny", "Read(.env)"),
        ("Grep", {"pattern": "K", "path": "src", "glob": "*.py"}, ("Read(.env)",), "allow", None),
        ("Glob", {"pattern": "*", "path": "secrets"}, SECRETS, "deny", "Glob(./secrets/**)"),
        ("Glob", {"pattern": "secrets/*"}, SECRETS, "deny", "Glob(./secrets/**)"),
        ("Glob", {"pattern": "secrets/**/*.pem", "path": "."}, SECRETS, "deny", None),
        ("Glob", {"pattern": "**/*.py"}, SECRETS, "deny", "Glob(./secrets/**)"),
        ("Glob", {"pattern": "**/*.py"}, ("Read(./.env)",), "allow", None),
        ("Glob", {"pattern": ".e*"}, ("Read(./.env)",), "deny", "Read(./.env)"),
        ("Glob", {"pattern": "*.md"}, SECRETS, "allow", None),
        ("Glob", {"pattern": "src/**/*.py"}, SECRETS, "allow", None),
        ("Glob", {"pattern": "**", "path": "src"}, SECRETS, "allow", None),
        ("Glob", {"pattern": f"{ROOT}/secrets/*"}, SECRETS, "deny", "Glob(./secrets/**)"),
        ("ListDirectory", {"path": "secrets"}, ("Read(./secrets/**)",), "deny", None),
        ("ListDirectory", {"path": "."}, ("Read(./secrets/**)",), "allow", None),
        ("ListDirectory", {"path": "."}, ("Read(./.env)",), "allow", None),
    ],
)
def test_deny_rules_cover_what_a_search_reaches(
    tool: str, arguments: dict[str, Any], deny: tuple[str, ...], expect: str, rule: str | None
) -> None:
    config = PermissionConfig.from_rules(deny=deny, mode="bypass", workspace=ROOT)
    decision = PermissionEngine(config).decide(SEARCH_TOOLS[tool], arguments)
    assert decision.kind == expect, decision
    if rule is not None:
        assert decision.rule == rule


def test_a_search_denied_for_what_it_contains_names_the_rule_and_a_narrower_path() -> None:
    config = PermissionConfig.from_rules(deny=["Read(./.env)"], mode="bypass", workspace=ROOT)
    decision = PermissionEngine(config).decide(SEARCH_TOOLS["Grep"], {"pattern": "K"})
    assert decision.kind == "deny"
    assert decision.message is not None
    assert 'rule "Read(./.env)"' in decision.message
    assert "narrower path" in decision.message


def test_allow_rules_for_a_glob_judge_its_directory_and_path() -> None:
    config = PermissionConfig.from_rules(allow=["Glob(./src/**)"], mode="dont_ask", workspace=ROOT)
    engine = PermissionEngine(config)
    glob = SEARCH_TOOLS["Glob"]
    assert engine.decide(glob, {"pattern": "src/**/*.py"}).kind == "allow"
    assert engine.decide(glob, {"pattern": "*.py", "path": "src"}).kind == "allow"
    assert engine.decide(glob, {"pattern": "**/*.py"}).kind == "deny"
    assert engine.decide(glob, {"pattern": "src/*", "path": "."}).kind == "allow"
    assert engine.decide(glob, {"pattern": "../*", "path": "src"}).kind == "deny"


# --- the permission settings are protected (regression: accept_edits rewrote them) -----------

PROTECTED_FILES = [".dive/settings.local.json", ".dive/settings.json", "src/../.dive/x"]


@pytest.mark.parametrize("path", [*PROTECTED_FILES, ".DIVE/settings.json", f"{ROOT}/.dive/a"])
@pytest.mark.parametrize("mode_name", ["default", "accept_edits", "bypass"])
@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_edits_of_the_permission_settings_always_ask(path: str, mode_name: str, tool: str) -> None:
    config = PermissionConfig.from_rules(mode=mode_name, allow=[tool], workspace=ROOT)
    engine = PermissionEngine(config)
    engine.grant_for_session(tool)
    decision = engine.decide(TOOLS[tool], {"file_path": path})
    assert (decision.kind, decision.decided_by) == ("ask", "mode")
    assert decision.rule is not None
    assert decision.rule.startswith("protected:")


def test_the_permission_settings_in_dont_ask_mode_are_refused_and_deny_rules_still_deny() -> None:
    config = PermissionConfig.from_rules(mode="dont_ask", allow=["Write"], workspace=ROOT)
    decision = PermissionEngine(config).decide(TOOLS["Write"], {"file_path": ".dive/a.json"})
    assert (decision.kind, decision.decided_by) == ("deny", "mode")
    assert decision.message is not None
    assert "permission settings" in decision.message
    config = PermissionConfig.from_rules(mode="bypass", deny=["Write(./.dive/**)"], workspace=ROOT)
    decision = PermissionEngine(config).decide(TOOLS["Write"], {"file_path": ".dive/a.json"})
    assert (decision.kind, decision.rule) == ("deny", "Write(./.dive/**)")


def test_an_allow_rule_naming_the_settings_path_allows_the_edit() -> None:
    config = PermissionConfig.from_rules(
        mode="accept_edits", allow=["Write(./.dive/settings.local.json)"], workspace=ROOT
    )
    engine = PermissionEngine(config)
    write = TOOLS["Write"]
    decision = engine.decide(write, {"file_path": ".dive/settings.local.json"})
    assert (decision.kind, decision.rule) == ("allow", "Write(./.dive/settings.local.json)")
    assert engine.decide(write, {"file_path": ".dive/settings.json"}).kind == "ask"
    engine.grant_for_session("Write", "./.dive/**")
    assert engine.decide(write, {"file_path": ".dive/settings.json"}).kind == "allow"


def test_the_user_settings_and_links_into_the_settings_are_protected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "ws"
    (root / ".dive").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "cfg").symlink_to(root / ".dive")
    engine = PermissionEngine(PermissionConfig.from_rules(mode="accept_edits", workspace=root))
    write = TOOLS["Write"]
    for path in ("~/.dive/settings.json", str(home / ".dive" / "x"), "src/cfg/settings.json"):
        assert engine.decide(write, {"file_path": path}).kind == "ask", path
    assert engine.decide(write, {"file_path": "src/a.py"}).kind == "allow"
    assert engine.decide(TOOLS["Read"], {"file_path": ".dive/settings.json"}).kind == "allow"
    assert engine.decide(write, {"file_path": str(tmp_path / "other" / ".dive" / "x")}).kind == (
        "allow"
    )
