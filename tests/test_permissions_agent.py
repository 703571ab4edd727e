"""The permission engine through an ``Agent``: deny, allow, dialogs, suspend and resume,
session grants, settings files and the audit log in a stored session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dive.agent import Agent, HookContext, Hooks, ToolApproval
from dive.messages import Message, ToolResult
from dive.permissions import (
    ARGUMENT_KEY,
    KIND_KEY,
    ApprovalRequest,
    AuditEntry,
    DialogAnswer,
    DialogDecision,
    PermissionConfig,
    PermissionConfigError,
    PermissionPolicy,
    audit_log,
    permission_policy,
)
from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.testing import ScriptedModel, ScriptItem, call, text, tool_use
from dive.tools import FunctionTool, Tool, ToolAnnotations
from dive.turns import Turn


class Kit:
    """Fake tools carrying the toolkit's permission metadata; they record what ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        ran = self.ran

        async def bash(command: str) -> str:
            """Run a shell command (fake)."""
            ran.append(f"Bash:{command}")
            return f"ran {command}"

        async def read(file_path: str) -> str:
            """Read a file (fake)."""
            ran.append(f"Read:{file_path}")
            return "contents"

        async def write(file_path: str, content: str) -> str:
            """Write a file (fake)."""
            ran.append(f"Write:{file_path}")
            return "written"

        self.bash = FunctionTool(
            bash,
            name="Bash",
            annotations=ToolAnnotations(destructive=True, open_world=True),
            metadata={ARGUMENT_KEY: "command", KIND_KEY: "command"},
        )
        self.read = FunctionTool(
            read,
            name="Read",
            annotations=ToolAnnotations(read_only=True),
            metadata={ARGUMENT_KEY: "file_path", KIND_KEY: "path"},
        )
        self.write = FunctionTool(
            write,
            name="Write",
            annotations=ToolAnnotations(edit=True, destructive=True),
            tags=("edit",),
            metadata={ARGUMENT_KEY: "file_path", KIND_KEY: "path"},
        )
        self.tools: list[Tool] = [self.bash, self.read, self.write]


def sh(command: str, id: str) -> ScriptItem:
    return tool_use(call("Bash", {"command": command}, id=id))


def results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    return {r.tool_call_id: r for m in messages if (r := m.tool_result) is not None}


def decisions(turn: Turn) -> list[tuple[str, str, str, str | None]]:
    return [(e.call_id, e.decision, e.decided_by, e.rule) for e in audit_log(turn)]


def agent_for(
    kit: Kit, script: Sequence[ScriptItem], policy: PermissionPolicy, **kw: Any
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    return Agent(model=model, tools=kit.tools, approval_policy=policy, **kw), model


# --- the gate sees what will run --------------------------------------------------------------


async def test_the_policy_sees_the_input_a_pre_tool_use_hook_rewrote() -> None:
    """Regression: the gate decided on the model's arguments while the rewrite ran."""
    kit = Kit()

    def rewrite(ctx: HookContext) -> None:
        ctx.updated_input = {"command": "rm -rf /"}

    policy = permission_policy(PermissionConfig.from_rules(deny=["Bash(rm:*)"]))
    agent, _ = agent_for(
        kit, [sh("git status", "c1"), text("done")], policy, hooks=Hooks(pre_tool_use=[rewrite])
    )
    result = await agent.run("status")
    assert kit.ran == []
    assert results(result.turn.messages)["c1"].is_error
    assert decisions(result.turn) == [("c1", "deny", "rule", "Bash(rm:*)")]


async def test_an_approved_call_runs_the_input_the_hook_rewrote_and_the_gate_saw() -> None:
    """Regression: the held call was approved for the rewritten input, then ran the original."""
    kit = Kit()

    def rewrite(ctx: HookContext) -> None:
        ctx.updated_input = {"command": "git push --dry-run"}

    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]))
    store = MemorySessionStore()
    agent, _ = agent_for(
        kit,
        [sh("git push", "c1"), text("done")],
        policy,
        hooks=Hooks(pre_tool_use=[rewrite]),
        session=store.session("s"),
    )
    first = await agent.run("push")
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert dict(pending.input) == {"command": "git push --dry-run"}
    assert '"git push --dry-run"' in pending.prompt
    done = await agent.run(tool_results={"c1": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert kit.ran == ["Bash:git push --dry-run"]


# --- decisions at the gate --------------------------------------------------------------------


async def test_a_deny_rule_answers_the_call_is_error_and_nothing_runs() -> None:
    kit = Kit()
    config = PermissionConfig.from_rules(allow=["Bash(git status:*)"], deny=["Bash(rm:*)"])
    agent, model = agent_for(
        kit, [sh("git status && rm -rf /", "c1"), text("ok")], permission_policy(config)
    )
    result = await agent.run("clean up")
    assert result.status == "completed"
    assert kit.ran == []
    answer = results(result.turn.messages)["c1"]
    assert answer.is_error
    assert 'Permission denied by rule "Bash(rm:*)"' in answer.text
    assert [(r.tool_call_id, r.is_error) for r in results(model.requests[1].messages).values()] == [
        ("c1", True)
    ]
    assert decisions(result.turn) == [("c1", "deny", "rule", "Bash(rm:*)")]
    [record] = result.turn.tool_calls
    assert record.error == "denied by the approval gate"


async def test_an_allow_rule_lets_a_call_run_where_the_mode_would_deny() -> None:
    kit = Kit()
    config = PermissionConfig.from_rules(allow=["Bash(git status:*)"], mode="dont_ask")
    agent, _ = agent_for(
        kit,
        [sh("git status -s", "c1"), sh("git status && rm -rf /", "c2"), text("ok")],
        permission_policy(config),
        parallel_tool_execution=False,
    )
    result = await agent.run("status")
    assert kit.ran == ["Bash:git status -s"]
    got = results(result.turn.messages)
    assert not got["c1"].is_error
    assert got["c2"].is_error
    assert "dont_ask" in got["c2"].text
    assert decisions(result.turn) == [
        ("c1", "allow", "rule", "Bash(git status:*)"),
        ("c2", "deny", "mode", "mode:dont_ask"),
    ]


async def test_plan_mode_runs_read_only_tools_and_denies_the_rest() -> None:
    kit = Kit()
    agent, _ = agent_for(
        kit,
        [
            tool_use(
                call("Read", {"file_path": "a.py"}, id="r1"),
                call("Write", {"file_path": "a.py", "content": "x"}, id="w1"),
            ),
            text("planned"),
        ],
        permission_policy(PermissionConfig.from_rules(mode="plan", allow=["Write"])),
    )
    result = await agent.run("plan it")
    assert kit.ran == ["Read:a.py"]
    denial = results(result.turn.messages)["w1"]
    assert denial.is_error
    assert "Plan mode allows only read-only tools" in denial.text
    assert decisions(result.turn) == [
        ("r1", "allow", "mode", "mode:plan"),
        ("w1", "deny", "mode", "mode:plan"),
    ]


async def test_an_ask_settled_by_the_dialog() -> None:
    kit = Kit()
    seen: list[ApprovalRequest] = []

    async def dialog(request: ApprovalRequest) -> DialogAnswer:
        seen.append(request)
        if request.specifier == "git push origin main":
            return DialogAnswer(decision="allow")
        return DialogAnswer(decision="deny", message="not that remote")

    config = PermissionConfig.from_rules(ask=["Bash(git push:*)"], mode="dont_ask")
    agent, _ = agent_for(
        kit,
        [tool_use(call("Bash", {"command": "git push origin main"}, id="c1")), text("pushed")],
        permission_policy(config, dialog),
    )
    result = await agent.run("push")
    assert result.status == "completed"
    assert kit.ran == []  # dont_ask turns the ask rule into a denial: the dialog is not asked
    assert seen == []

    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]), dialog)
    agent, _ = agent_for(
        kit,
        [sh("git push origin main", "c1"), sh("git push upstream", "c2"), text("pushed")],
        policy,
        parallel_tool_execution=False,
    )
    result = await agent.run("push")
    assert kit.ran == ["Bash:git push origin main"]
    assert [(r.asked_by, r.rule, r.mode) for r in seen] == [
        ("rule", "Bash(git push:*)", "default"),
        ("rule", "Bash(git push:*)", "default"),
    ]
    assert seen[0].prompt.startswith('Allow calling "Bash" with command "git push origin main"?')
    assert results(result.turn.messages)["c2"].text == "not that remote"
    assert decisions(result.turn) == [
        ("c1", "allow", "dialog", "Bash(git push:*)"),
        ("c2", "deny", "dialog", "Bash(git push:*)"),
    ]


async def test_a_dialog_answering_allow_for_session_grants_the_next_calls() -> None:
    kit = Kit()
    asked: list[str] = []

    def dialog(request: ApprovalRequest) -> DialogDecision:
        asked.append(request.call.id)
        return "allow_for_session"

    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(npm publish:*)"]), dialog)
    store = MemorySessionStore()
    agent, _ = agent_for(
        kit,
        [sh("npm publish", "c1"), text("one"), sh("npm publish", "c2"), text("two")],
        policy,
        session=store.session("s"),
    )
    first = await agent.run("publish")
    second = await agent.run("again")
    assert asked == ["c1"]
    assert kit.ran == ["Bash:npm publish", "Bash:npm publish"]
    assert decisions(first.turn) == [("c1", "allow", "dialog", "Bash(npm publish:*)")]
    assert decisions(second.turn) == [("c2", "allow", "session_grant", "Bash(npm publish)")]
    assert [g.text for g in policy.engine.grants] == ["Bash(npm publish)"]


async def test_a_failing_dialog_denies() -> None:
    kit = Kit()

    def dialog(request: ApprovalRequest) -> DialogAnswer:
        raise RuntimeError("the terminal is gone")

    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash"]), dialog)
    agent, _ = agent_for(kit, [sh("ls", "c1"), text("ok")], policy)
    result = await agent.run("list")
    assert kit.ran == []
    assert "the terminal is gone" in results(result.turn.messages)["c1"].text
    assert decisions(result.turn) == [("c1", "deny", "dialog", "Bash")]


# --- ask without a dialog: suspend, then resume ------------------------------------------------


def _suspending_agent(
    kit: Kit, script: Sequence[ScriptItem], policy: PermissionPolicy
) -> tuple[Agent, MemorySessionStore]:
    store = MemorySessionStore()
    agent, _ = agent_for(kit, script, policy, session=store.session("s"))
    return agent, store


async def test_an_ask_suspends_with_approval_required_and_approving_runs_it() -> None:
    kit = Kit()
    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]))
    agent, _ = _suspending_agent(kit, [sh("git push", "c1"), text("pushed")], policy)
    first = await agent.run("push")
    assert first.status == "suspended"
    assert first.turn.suspension is not None
    [pending] = first.turn.suspension.pending_tool_calls
    assert (pending.id, pending.reason, pending.started) == ("c1", "approval_required", False)
    assert "Bash(git push:*)" in pending.prompt
    assert kit.ran == []
    assert decisions(first.turn) == [("c1", "ask", "rule", "Bash(git push:*)")]

    done = await agent.run(tool_results={"c1": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert kit.ran == ["Bash:git push"]
    assert decisions(done.turn) == [
        ("c1", "ask", "rule", "Bash(git push:*)"),
        ("c1", "allow", "resume", None),
    ]
    assert policy.engine.grants == ()


async def test_denying_on_resume_answers_the_call_with_the_message() -> None:
    kit = Kit()
    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]))
    agent, _ = _suspending_agent(kit, [sh("git push", "c1"), text("ok")], policy)
    await agent.run("push")
    done = await agent.run(
        tool_results={"c1": ToolApproval(approved=False, message="not on Fridays")}
    )
    assert done.status == "completed"
    assert kit.ran == []
    answer = results(done.turn.messages)["c1"]
    assert (answer.is_error, answer.text) == (True, "not on Fridays")
    [_, resumed] = audit_log(done.turn)
    assert (resumed.decision, resumed.decided_by, resumed.message) == (
        "deny",
        "resume",
        "not on Fridays",
    )


async def test_allow_for_session_on_resume_grants_the_next_identical_command() -> None:
    kit = Kit()
    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]))
    agent, _ = _suspending_agent(
        kit,
        [
            sh("git push && git push --tags", "c1"),
            text("pushed"),
            sh("git push --tags", "c2"),
            text("pushed tags"),
            sh("git push --force", "c3"),
        ],
        policy,
    )
    await agent.run("push")
    done = await agent.run(tool_results={"c1": ToolApproval(approved=True, for_session=True)})
    assert done.status == "completed"
    assert [g.text for g in policy.engine.grants] == ["Bash(git push)", "Bash(git push --tags)"]

    second = await agent.run("push the tags")
    assert second.status == "completed"
    assert decisions(second.turn) == [("c2", "allow", "session_grant", "Bash(git push --tags)")]
    third = await agent.run("force it")
    assert third.status == "suspended"  # a different command is asked about again
    assert kit.ran == ["Bash:git push && git push --tags", "Bash:git push --tags"]


async def test_requires_approval_asks_and_an_allow_rule_still_lets_it_run() -> None:
    kit = Kit()

    async def deploy(target: str) -> str:
        """Deploy (fake)."""
        kit.ran.append(f"deploy:{target}")
        return "deployed"

    gated = FunctionTool(deploy, requires_approval=True)
    kit.tools.append(gated)
    policy = permission_policy(PermissionConfig.from_rules())
    agent, _ = _suspending_agent(
        kit, [tool_use(call("deploy", {"target": "prod"}, id="d1")), text("ok")], policy
    )
    first = await agent.run("deploy")
    assert first.status == "suspended"
    assert decisions(first.turn) == [("d1", "ask", "mode", "mode:default")]
    assert first.turn.suspension is not None
    assert "requires approval" in first.turn.suspension.pending_tool_calls[0].prompt

    allowing = permission_policy(PermissionConfig.from_rules(allow=["deploy"]))
    agent, _ = agent_for(
        kit, [tool_use(call("deploy", {"target": "prod"}, id="d1")), text("ok")], allowing
    )
    result = await agent.run("deploy")
    assert result.status == "completed"
    assert kit.ran == ["deploy:prod"]
    assert decisions(result.turn) == [("d1", "allow", "rule", "deploy")]


# --- settings files ---------------------------------------------------------------------------


def _settings(path: Path, permissions: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions, "model": "ignored"}))


async def test_settings_files_merge_lists_and_the_most_specific_mode_wins(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "project"
    _settings(home / ".dive" / "settings.json", {"allow": ["Read"], "defaultMode": "plan"})
    _settings(
        root / ".dive" / "settings.json",
        {"allow": ["Bash(git status:*)"], "deny": ["Bash(git push:*)"], "defaultMode": "default"},
    )
    _settings(
        root / ".dive" / "settings.local.json",
        {"ask": ["Bash(git commit:*)"], "defaultMode": "dontAsk"},
    )
    config = PermissionConfig.load(root, home=home, deny=["Bash(rm:*)"])
    assert config.mode == "dont_ask"
    assert [r.text for r in config.allow] == ["Read", "Bash(git status:*)"]
    assert [r.text for r in config.deny] == ["Bash(git push:*)", "Bash(rm:*)"]
    assert [r.text for r in config.ask] == ["Bash(git commit:*)"]
    assert [r.source for r in config.deny] == [str(root / ".dive" / "settings.json"), "code"]
    assert config.workspace == root
    assert len(config.sources) == 3
    assert PermissionConfig.load(root, home=home, mode="bypass_permissions").mode == "bypass"
    assert PermissionConfig.load(root, home=home, user=False).allow[0].text == "Bash(git status:*)"

    kit = Kit()
    agent, _ = agent_for(
        kit,
        [
            tool_use(
                call("Read", {"file_path": "README.md"}, id="r1"),
                call("Bash", {"command": "git status"}, id="b1"),
                call("Bash", {"command": "git push"}, id="b2"),
                call("Bash", {"command": "ls"}, id="b3"),
            ),
            text("ok"),
        ],
        permission_policy(config),
    )
    result = await agent.run("go")
    assert sorted(kit.ran) == ["Bash:git status", "Read:README.md"]
    assert decisions(result.turn) == [
        ("r1", "allow", "rule", "Read"),
        ("b1", "allow", "rule", "Bash(git status:*)"),
        ("b2", "deny", "rule", "Bash(git push:*)"),
        ("b3", "deny", "mode", "mode:dont_ask"),
    ]


def test_a_missing_file_is_skipped_and_a_file_without_permissions_adds_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / ".dive").mkdir()
    (tmp_path / ".dive" / "settings.json").write_text('{"theme": "dark"}')
    config = PermissionConfig.load(tmp_path, home=tmp_path / "nobody")
    assert (config.mode, config.allow, config.deny, config.ask) == ("default", (), (), ())
    assert config.sources == (str(tmp_path / ".dive" / "settings.json"),)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "not valid JSON (line 1"),
        ("[]", "the settings must be a JSON object"),
        ('{"permissions": []}', '"permissions" must be an object'),
        ('{"permissions": {"allow": "Bash"}}', '"permissions.allow" must be a list'),
        ('{"permissions": {"allow": ["Bash(git status"]}}', "missing its closing ')'"),
        ('{"permissions": {"deny": ["Bash git"]}}', "starts with a tool name"),
        ('{"permissions": {"ask": ["Bash(git:* x)"]}}', "must end the specifier"),
        ('{"permissions": {"allow": ["WebFetch(domain:https://x.com)"]}}', "not a host name"),
        ('{"permissions": {"allow": ["Read()"]}}', "is empty"),
        ('{"permissions": {"allow": [3]}}', "is not a string"),
        ('{"permissions": {"defaultMode": "yolo"}}', "unknown permission mode 'yolo'"),
        ('{"permissions": {"alow": []}}', "unknown key(s) alow"),
    ],
)
def test_a_bad_settings_file_names_the_file_and_what_is_wrong(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / ".dive" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(PermissionConfigError) as info:
        PermissionConfig.load(tmp_path, user=False)
    assert str(path) in str(info.value)
    assert expected in str(info.value)
    assert info.value.source == str(path)


# --- the audit log in a stored session ---------------------------------------------------------


async def test_the_audit_log_is_saved_in_a_sqlite_session_and_reloads(tmp_path: Path) -> None:
    kit = Kit()
    db = tmp_path / "s.db"
    store = SQLiteSessionStore(db)
    config = PermissionConfig.from_rules(
        allow=["Read(./src/**)"], deny=["Read(./.env)"], ask=["Bash(git push:*)"]
    )
    policy = permission_policy(config)
    agent, _ = agent_for(
        kit,
        [
            tool_use(
                call("Read", {"file_path": "src/a.py"}, id="r1"),
                call("Read", {"file_path": ".env"}, id="r2"),
                call("Bash", {"command": "git push"}, id="b1"),
            ),
            text("done"),
        ],
        policy,
        session=store.session("audit"),
    )
    first = await agent.run("go")
    assert first.status == "suspended"
    done = await agent.run(tool_results={"b1": ToolApproval(approved=True, for_session=True)})
    assert done.status == "completed"
    expected = [
        ("r1", "allow", "rule", "Read(./src/**)"),
        ("r2", "deny", "rule", "Read(./.env)"),
        ("b1", "ask", "rule", "Bash(git push:*)"),
        ("b1", "allow", "resume", None),
    ]
    assert decisions(done.turn) == expected
    await store.close()

    reopened = SQLiteSessionStore(db)
    turns = await reopened.turns("audit")
    await reopened.close()
    [turn] = turns
    log = audit_log(turns)
    assert [(e.call_id, e.decision, e.decided_by, e.rule) for e in log] == expected
    assert all(isinstance(e, AuditEntry) and e.turn_id == turn.id for e in log)
    assert all(e.tool == {"r": "Read", "b": "Bash"}[e.call_id[0]] for e in log)
    assert all(e.at is not None for e in log)
    assert Turn.from_json(turn.to_json()) == turn
    assert turn.tool_calls == done.turn.tool_calls


def test_records_without_approvals_load_unchanged_and_encode_without_the_field() -> None:
    old = {
        "id": "turn_" + "0" * 32,
        "status": "completed",
        "tool_calls": [{"id": "c1", "name": "Bash", "state": "completed"}],
    }
    turn = Turn.from_json(old)
    assert turn.tool_calls[0].approvals == ()
    assert "approvals" not in turn.to_json()


def test_the_example_in_the_docs_runs_and_prints_what_the_docs_say(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "permissions.md").read_text()
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    printed = doc.split("prints\n\n```text\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/permissions.md", "exec"), {"__name__": "docs_example"})
    assert capsys.readouterr().out == printed


async def test_a_partial_resume_keeps_its_decision_in_the_stored_suspension() -> None:
    kit = Kit()
    policy = permission_policy(PermissionConfig.from_rules(ask=["Bash(git push:*)"]))
    store = MemorySessionStore()
    agent, _ = agent_for(
        kit,
        [
            tool_use(
                call("Bash", {"command": "git push a"}, id="c1"),
                call("Bash", {"command": "git push b"}, id="c2"),
            ),
            text("ok"),
        ],
        policy,
        session=store.session("s"),
    )
    first = await agent.run("push both")
    assert first.status == "suspended"
    partial = await agent.run(tool_results={"c1": ToolApproval(approved=False)})
    assert partial.status == "suspended"
    snap = await store.load("s")
    assert snap.open_turn is not None
    assert decisions(snap.open_turn) == [
        ("c1", "ask", "rule", "Bash(git push:*)"),
        ("c1", "deny", "resume", None),
        ("c2", "ask", "rule", "Bash(git push:*)"),
    ]
    assert snap.open_turn.suspension is not None
    assert snap.open_turn.suspension.tool_calls == snap.open_turn.tool_calls
    done = await agent.run(tool_results={"c2": ToolApproval(approved=True)})
    assert done.status == "completed"
    assert kit.ran == ["Bash:git push b"]
    assert [e.decided_by for e in audit_log(done.turn)] == ["rule", "resume", "rule", "resume"]


async def test_a_hook_verdict_wins_over_the_rules_and_is_recorded_as_hook() -> None:
    kit = Kit()

    def approve(ctx: HookContext) -> None:
        ctx.approved = True

    policy = permission_policy(PermissionConfig.from_rules(deny=["Bash(rm:*)"]))
    agent, _ = agent_for(
        kit, [sh("rm -rf build", "c1"), text("ok")], policy, hooks=Hooks(pre_tool_use=[approve])
    )
    result = await agent.run("clean")
    assert kit.ran == ["Bash:rm -rf build"]
    assert decisions(result.turn) == [("c1", "allow", "hook", None)]


# --- regressions from the security review: a grant never turns an allow into a denial ---------


def _fetcher(kit: Kit) -> FunctionTool:
    async def fetch(url: str) -> str:
        """Fetch a URL (fake)."""
        kit.ran.append(f"WebFetch:{url}")
        return "page"

    tool = FunctionTool(
        fetch,
        name="WebFetch",
        annotations=ToolAnnotations(read_only=True, open_world=True),
        metadata={ARGUMENT_KEY: "url", KIND_KEY: "url"},
    )
    kit.tools.append(tool)
    return tool


def _fetch(url: str, id: str) -> ScriptItem:
    return tool_use(call("WebFetch", {"url": url}, id=id))


async def test_allow_for_session_in_the_dialog_on_an_ipv6_url_runs_it_and_grants_the_host() -> None:
    """Regression: ``domain:::1`` failed the rule syntax, so the user's allow became a denial."""
    kit = Kit()
    _fetcher(kit)
    policy = permission_policy(
        PermissionConfig.from_rules(ask=["WebFetch"]), lambda _: "allow_for_session"
    )
    agent, _ = agent_for(kit, [_fetch("http://[::1]:8080/x", "f1"), text("ok")], policy)
    result = await agent.run("fetch")
    assert kit.ran == ["WebFetch:http://[::1]:8080/x"]
    assert decisions(result.turn) == [("f1", "allow", "dialog", "WebFetch")]
    assert [g.text for g in policy.engine.grants] == ["WebFetch(domain:::1)"]


async def test_a_dialog_naming_an_invalid_grant_still_allows_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kit = Kit()
    policy = permission_policy(
        PermissionConfig.from_rules(ask=["Bash"]),
        lambda _: DialogAnswer(decision="allow_for_session", pattern="git push:* x"),
    )
    agent, _ = agent_for(kit, [sh("git push", "c1"), text("ok")], policy)
    result = await agent.run("push")
    assert kit.ran == ["Bash:git push"]
    assert decisions(result.turn) == [("c1", "allow", "dialog", "Bash")]
    assert policy.engine.grants == ()
    assert any("could not be made" in r.getMessage() for r in caplog.records)


async def test_allow_for_session_on_resume_with_an_idn_or_ipv6_url_completes() -> None:
    """Regression: the grant raised PermissionConfigError from ``resumed``, failing the resume."""
    kit = Kit()
    _fetcher(kit)
    policy = permission_policy(PermissionConfig.from_rules(ask=["WebFetch"]))
    agent, _ = _suspending_agent(
        kit,
        [_fetch("https://b\u00fccher.de/", "f1"), _fetch("http://[::1]/", "f2"), text("ok")],
        policy,
    )
    first = await agent.run("fetch")
    assert first.status == "suspended"
    second = await agent.run(tool_results={"f1": ToolApproval(approved=True, for_session=True)})
    assert second.status == "suspended"
    done = await agent.run(tool_results={"f2": ToolApproval(approved=True, for_session=True)})
    assert done.status == "completed"
    assert [g.text for g in policy.engine.grants] == [
        "WebFetch(domain:xn--bcher-kva.de)",
        "WebFetch(domain:::1)",
    ]


def test_resumed_never_raises(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit = Kit()
    policy = permission_policy(PermissionConfig.from_rules())

    def broken(tool: Tool, arguments: object) -> tuple[()]:
        raise RuntimeError("no grant today")

    monkeypatch.setattr(policy.engine, "grants_for_call", broken)
    approval = ToolApproval(approved=True, for_session=True)
    policy.resumed(kit.bash, call("Bash", {"command": "ls"}, id="c1"), approval)
    assert any("could not be made" in r.getMessage() for r in caplog.records)
