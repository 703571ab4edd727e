"""The permission engine's decisions as a table: rules, mode and tool → allow / deny / ask.

Each row builds an engine from its rules, mode and session grants, decides one call, and
checks the decision, who made it and the rule it names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
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


def r(
    id: str,
    tool: str,
    value: str | None,
    expect: str,
    by: str,
    rule: str | None = None,
    **kw: Any,
) -> Row:
    return Row(id, tool, value, expect, by, rule, **kw)


ROWS = [
    # --- every mode, no rules ------------------------------------------------------------------
    r("default-bash", "Bash", "ls", "allow", "mode", "mode:default"),
    r("plan-bash", "Bash", "ls", "deny", "mode", "mode:plan", mode="plan"),
    r("accept-edits-bash", "Bash", "ls", "allow", "mode", "mode:accept_edits", mode="accept_edits"),
    r("bypass-bash", "Bash", "ls", "allow", "mode", "mode:bypass", mode="bypass"),
    r("bypass-alias", "Bash", "ls", "allow", "mode", "mode:bypass", mode="bypass_permissions"),
    r("dont-ask-bash", "Bash", "ls", "deny", "mode", "mode:dont_ask", mode="dont_ask"),
    r("default-read", "Read", "a.py", "allow", "mode", "mode:default"),
    r("plan-read", "Read", "a.py", "allow", "mode", "mode:plan", mode="plan"),
    r("plan-webfetch", "WebFetch", "https://x.org", "allow", "mode", "mode:plan", mode="plan"),
    r("plan-mcp-read-only", "mcp__github__list_issues", None, "allow", "mode", mode="plan"),
    r("dont-ask-read", "Read", "a.py", "deny", "mode", "mode:dont_ask", mode="dont_ask"),
    # --- plan mode with write tools -----------------------------------------------------------
    r("plan-write", "Write", "a.py", "deny", "mode", "mode:plan", mode="plan"),
    r(
        "plan-beats-allow",
        "Write",
        "a.py",
        "deny",
        "mode",
        "mode:plan",
        mode="plan",
        allow=("Write",),
    ),
    r(
        "plan-beats-grant",
        "Bash",
        "ls",
        "deny",
        "mode",
        "mode:plan",
        mode="plan",
        grants=(("Bash", None),),
    ),
    r("plan-deploy", "deploy", None, "deny", "mode", "mode:plan", mode="plan"),
    r("plan-read-only-gated", "lookup", None, "ask", "mode", "mode:plan", mode="plan"),
    # --- accept_edits with edit tools ---------------------------------------------------------
    r("accept-write", "Write", "a.py", "allow", "mode", "mode:accept_edits", mode="accept_edits"),
    r("accept-edit-tag", "Edit", "a.py", "allow", "mode", "mode:accept_edits", mode="accept_edits"),
    r("accept-edit-gated", "EditGated", "a.py", "allow", "mode", mode="accept_edits"),
    r("default-edit-gated", "EditGated", "a.py", "ask", "mode", "mode:default"),
    r(
        "accept-ask-rule",
        "Write",
        "secrets/k",
        "ask",
        "rule",
        "Write(./secrets/**)",
        mode="accept_edits",
        ask=("Write(./secrets/**)",),
    ),
    # --- requires_approval --------------------------------------------------------------------
    r("default-requires-approval", "deploy", None, "ask", "mode", "mode:default"),
    r("accept-requires-approval", "deploy", None, "ask", "mode", mode="accept_edits"),
    r("bypass-requires-approval", "deploy", None, "allow", "mode", mode="bypass"),
    r("dont-ask-requires-approval", "deploy", None, "deny", "mode", mode="dont_ask"),
    r("allow-rule-beats-requires", "deploy", None, "allow", "rule", "deploy", allow=("deploy",)),
    r(
        "grant-beats-requires",
        "deploy",
        None,
        "allow",
        "session_grant",
        "deploy",
        grants=(("deploy", None),),
    ),
    r("deploy-star", "deploy", None, "allow", "rule", "deploy(*)", allow=("deploy(*)",)),
    # --- deny rules are absolute --------------------------------------------------------------
    r(
        "deny-beats-bypass",
        "Bash",
        "rm -rf /",
        "deny",
        "rule",
        "Bash(rm:*)",
        mode="bypass",
        deny=("Bash(rm:*)",),
    ),
    r("deny-bare-bypass", "Bash", "ls", "deny", "rule", "Bash", mode="bypass", deny=("Bash",)),
    r(
        "deny-beats-allow",
        "Bash",
        "rm x",
        "deny",
        "rule",
        "Bash(rm:*)",
        allow=("Bash",),
        deny=("Bash(rm:*)",),
    ),
    r(
        "deny-beats-grant",
        "Bash",
        "rm x",
        "deny",
        "rule",
        "Bash(rm:*)",
        deny=("Bash(rm:*)",),
        grants=(("Bash", None),),
    ),
    r(
        "deny-any-segment",
        "Bash",
        "ls; rm -rf /",
        "deny",
        "rule",
        "Bash(rm:*)",
        deny=("Bash(rm:*)",),
    ),
    r(
        "deny-env-prefix",
        "Bash",
        "FOO=1 rm -rf /",
        "deny",
        "rule",
        "Bash(rm:*)",
        deny=("Bash(rm:*)",),
    ),
    r("deny-sudo", "Bash", "sudo rm -rf /", "deny", "rule", "Bash(rm:*)", deny=("Bash(rm:*)",)),
    r("deny-dollar-paren", "Bash", "echo $(rm -rf /)", "deny", "rule", deny=("Bash(rm:*)",)),
    r("deny-backticks", "Bash", "echo `rm -rf /`", "deny", "rule", deny=("Bash(rm:*)",)),
    r("deny-bash-c", "Bash", "bash -c 'ls && rm -rf /'", "deny", "rule", deny=("Bash(rm:*)",)),
    r("deny-quoted-not", "Bash", "echo 'rm -rf /'", "allow", "mode", deny=("Bash(rm:*)",)),
    r("deny-unparseable", "Bash", 'rm -rf / "', "deny", "rule", deny=("Bash(rm:*)",)),
    # --- allow rules and shell commands (dont_ask: only allow rules let a call run) -----------
    r(
        "git-status",
        "Bash",
        "git status",
        "allow",
        "rule",
        "Bash(git status:*)",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-status-args",
        "Bash",
        "git  status   -s",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-statusx",
        "Bash",
        "git statusx",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-status-and-rm",
        "Bash",
        "git status && rm -rf /",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-status-or-rm",
        "Bash",
        "git status || rm -rf /",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-status-bg-rm",
        "Bash",
        "git status & rm -rf /",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "git-status-subst",
        "Bash",
        "git status $(rm -rf /)",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "pipe-both-allowed",
        "Bash",
        "git status | grep x",
        "allow",
        "rule",
        "Bash(git status:*), Bash(grep:*)",
        mode="dont_ask",
        allow=("Bash(git status:*)", "Bash(grep:*)"),
    ),
    r(
        "redirect-write",
        "Bash",
        "git status > out.txt",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "redirect-null",
        "Bash",
        "git status > /dev/null",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "redirect-fd",
        "Bash",
        "git status 2>&1",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "assignment-prefix",
        "Bash",
        "LD_PRELOAD=x.so git status",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "glob-args",
        "Bash",
        "npm run test unit",
        "allow",
        "rule",
        "Bash(npm run test *)",
        mode="dont_ask",
        allow=("Bash(npm run test *)",),
    ),
    r(
        "glob-no-args",
        "Bash",
        "npm run test",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Bash(npm run test *)",),
    ),
    r(
        "glob-word",
        "Bash",
        "npm run testing",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(npm run test *)",),
    ),
    r(
        "exact",
        "Bash",
        "make",
        "allow",
        "rule",
        "Bash(make)",
        mode="dont_ask",
        allow=("Bash(make)",),
    ),
    r("exact-more", "Bash", "make install", "deny", "mode", mode="dont_ask", allow=("Bash(make)",)),
    r(
        "quoted-operator",
        "Bash",
        'echo "a && b"',
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Bash(echo:*)",),
    ),
    r(
        "unparseable-prefix",
        "Bash",
        'git status "',
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
    ),
    r(
        "unparseable-bare",
        "Bash",
        'git status "',
        "allow",
        "rule",
        "Bash",
        mode="dont_ask",
        allow=("Bash",),
    ),
    r("unparseable-asks", "Bash", "echo 'x", "ask", "rule", "Bash(echo:*)", ask=("Bash(echo:*)",)),
    # --- ask rules ----------------------------------------------------------------------------
    r("ask-rule", "Bash", "git push", "ask", "rule", "Bash(git push:*)", ask=("Bash(git push:*)",)),
    r(
        "ask-any-segment",
        "Bash",
        "git status && git push",
        "ask",
        "rule",
        "Bash(git push:*)",
        allow=("Bash(git status:*)",),
        ask=("Bash(git push:*)",),
    ),
    r(
        "allow-before-ask",
        "Bash",
        "git push",
        "allow",
        "rule",
        "Bash(git:*)",
        allow=("Bash(git:*)",),
        ask=("Bash(git push:*)",),
    ),
    r(
        "bypass-ask-rule",
        "Bash",
        "git push",
        "allow",
        "mode",
        "mode:bypass",
        mode="bypass",
        ask=("Bash(git push:*)",),
    ),
    r(
        "dont-ask-ask-rule",
        "Bash",
        "git push",
        "deny",
        "mode",
        "mode:dont_ask",
        mode="dont_ask",
        ask=("Bash(git push:*)",),
    ),
    r(
        "grant-before-ask",
        "Bash",
        "git push",
        "allow",
        "session_grant",
        "Bash(git push:*)",
        ask=("Bash(git push:*)",),
        grants=(("Bash", "git push:*"),),
    ),
    # --- session grants -----------------------------------------------------------------------
    r(
        "grant-prefix",
        "Bash",
        "git push origin",
        "allow",
        "session_grant",
        mode="dont_ask",
        grants=(("Bash", "git push:*"),),
    ),
    r(
        "grant-other",
        "Bash",
        "git pull",
        "deny",
        "mode",
        mode="dont_ask",
        grants=(("Bash", "git push:*"),),
    ),
    r(
        "grant-and-rule",
        "Bash",
        "git status && git push",
        "allow",
        "rule",
        "Bash(git status:*), Bash(git push:*)",
        mode="dont_ask",
        allow=("Bash(git status:*)",),
        grants=(("Bash", "git push:*"),),
    ),
    r(
        "grant-path",
        "Read",
        "docs/x.md",
        "allow",
        "session_grant",
        "Read(./docs/**)",
        mode="dont_ask",
        grants=(("Read", "./docs/**"),),
    ),
    # --- path specifiers ----------------------------------------------------------------------
    r(
        "path-in",
        "Read",
        "src/a.py",
        "allow",
        "rule",
        "Read(./src/**)",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-deep",
        "Read",
        "src/a/b/c.py",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-dir-itself",
        "Glob",
        "src",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Glob(./src/**)",),
    ),
    r(
        "path-absolute",
        "Read",
        f"{ROOT}/src/x.py",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-escape",
        "Read",
        "src/../../etc/passwd",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-dotdot-inside",
        "Read",
        "src/../src/a.py",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-sibling-prefix",
        "Read",
        "src2/a.py",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Read(./src/**)",),
    ),
    r(
        "path-star-one-segment",
        "Read",
        "src/a/b.py",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Read(./src/*)",),
    ),
    r(
        "path-star-ok",
        "Read",
        "src/b.py",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Read(./src/*)",),
    ),
    r(
        "path-any-depth",
        "Edit",
        "pkg/mod/x.py",
        "allow",
        "rule",
        "Edit(*.py)",
        mode="dont_ask",
        allow=("Edit(*.py)",),
    ),
    r(
        "path-any-depth-other",
        "Edit",
        "x.txt",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Edit(*.py)",),
    ),
    r(
        "path-any-depth-outside",
        "Edit",
        "/etc/x.py",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Edit(*.py)",),
    ),
    r(
        "path-deny-env",
        "Read",
        ".env",
        "deny",
        "rule",
        "Read(./.env)",
        mode="bypass",
        deny=("Read(./.env)",),
    ),
    r(
        "path-deny-normalized",
        "Read",
        "src/../secrets/k",
        "deny",
        "rule",
        mode="bypass",
        deny=("Read(./secrets/**)",),
    ),
    r(
        "path-home",
        "Read",
        "~/notes/a.md",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("Read(~/notes/**)",),
    ),
    r(
        "path-omitted-is-root",
        "Glob",
        None,
        "allow",
        "rule",
        "Glob(./**)",
        mode="dont_ask",
        allow=("Glob(./**)",),
    ),
    # --- URL specifiers -----------------------------------------------------------------------
    r(
        "url-domain",
        "WebFetch",
        "https://example.com/a",
        "allow",
        "rule",
        "WebFetch(domain:example.com)",
        mode="dont_ask",
        allow=("WebFetch(domain:example.com)",),
    ),
    r(
        "url-subdomain-not-apex-rule",
        "WebFetch",
        "https://docs.example.com/",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("WebFetch(domain:example.com)",),
    ),
    r(
        "url-wildcard-subdomain",
        "WebFetch",
        "https://docs.example.com/",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("WebFetch(domain:*.example.com)",),
    ),
    r(
        "url-lookalike",
        "WebFetch",
        "https://example.com.evil.net/",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("WebFetch(domain:example.com)",),
    ),
    r(
        "url-userinfo",
        "WebFetch",
        "https://example.com@evil.net/",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("WebFetch(domain:example.com)",),
    ),
    r(
        "url-not-web",
        "WebFetch",
        "ftp://example.com/",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("WebFetch(domain:example.com)",),
    ),
    r(
        "url-deny-bypass",
        "WebFetch",
        "http://EVIL.net:8080/x",
        "deny",
        "rule",
        mode="bypass",
        deny=("WebFetch(domain:evil.net)",),
    ),
    r(
        "url-glob",
        "WebFetch",
        "https://x.org/docs/a",
        "allow",
        "rule",
        mode="dont_ask",
        allow=("WebFetch(https://x.org/docs/*)",),
    ),
    # --- text specifiers ----------------------------------------------------------------------
    r(
        "text-glob",
        "WebSearch",
        "python asyncio",
        "allow",
        "rule",
        "WebSearch(python *)",
        mode="dont_ask",
        allow=("WebSearch(python *)",),
    ),
    r(
        "text-other",
        "WebSearch",
        "rust",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("WebSearch(python *)",),
    ),
    # --- MCP names ----------------------------------------------------------------------------
    r(
        "mcp-wildcard",
        "mcp__github__create_issue",
        None,
        "allow",
        "rule",
        "mcp__github__*",
        mode="dont_ask",
        allow=("mcp__github__*",),
    ),
    r(
        "mcp-other-server",
        "mcp__slack__post",
        None,
        "deny",
        "mode",
        mode="dont_ask",
        allow=("mcp__github__*",),
    ),
    r(
        "mcp-server-name",
        "mcp__github__list_issues",
        None,
        "allow",
        "rule",
        "mcp__github",
        mode="dont_ask",
        allow=("mcp__github",),
    ),
    r(
        "mcp-server-prefix-safe",
        "mcp__github__list_issues",
        None,
        "deny",
        "mode",
        mode="dont_ask",
        allow=("mcp__git",),
    ),
    r(
        "mcp-deny-bypass",
        "mcp__github__create_issue",
        None,
        "deny",
        "rule",
        mode="bypass",
        deny=("mcp__github__create_issue",),
    ),
    r(
        "mcp-exact",
        "mcp__slack__post",
        None,
        "ask",
        "rule",
        "mcp__slack__post",
        ask=("mcp__slack__post",),
    ),
    # --- tools without permission metadata ----------------------------------------------------
    r(
        "no-metadata-specifier",
        "Shell",
        "ls",
        "deny",
        "mode",
        mode="dont_ask",
        allow=("Shell(ls:*)",),
    ),
    r(
        "no-metadata-bare",
        "Shell",
        "ls",
        "allow",
        "rule",
        "Shell",
        mode="dont_ask",
        allow=("Shell",),
    ),
    r(
        "no-metadata-deny-specifier",
        "Shell",
        "rm -rf /",
        "allow",
        "mode",
        mode="bypass",
        deny=("Shell(rm:*)",),
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
