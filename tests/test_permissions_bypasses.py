"""Regressions: the permission-engine bypasses found from outside (each failed before its fix).

Every test here names the attack it stops. The shell ones are checked on the split and on the
decision (a deny rule in ``bypass`` mode, and an allow rule in ``dont_ask`` mode); the search
one drives the real toolkit ``Grep`` under the engine.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dive.agent._outputs import to_tool_result
from dive.globs import glob_regex
from dive.messages import ToolCall, ToolResult
from dive.permissions import (
    ARGUMENT_KEY,
    KIND_KEY,
    PermissionConfig,
    PermissionEngine,
    PermissionMode,
    split_command,
)
from dive.toolkit import Grep, Read, Workspace, Write
from dive.tools import FunctionTool, Tool, ToolAnnotations, ToolContext

ROOT = "/nonexistent-dive-workspace/project"


async def _shell(command: str) -> str:
    """Run a shell command (fake)."""
    return command


BASH: Tool = FunctionTool(
    _shell,
    name="Bash",
    annotations=ToolAnnotations(destructive=True, open_world=True),
    metadata={ARGUMENT_KEY: "command", KIND_KEY: "command"},
)


def decide(
    command: str,
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    mode: PermissionMode = "dont_ask",
) -> tuple[str, str | None]:
    config = PermissionConfig.from_rules(allow=allow, deny=deny, mode=mode, workspace=ROOT)
    decision = PermissionEngine(config).decide(BASH, {"command": command})
    return decision.kind, decision.rule


def texts(command: str) -> list[str]:
    return [s.text for s in split_command(command).segments]


def _runs(command: str, tmp_path: Path) -> list[str]:
    """The files a real bash creates running ``command`` in ``tmp_path/ws``."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    subprocess.run(["bash", "-c", command], cwd=ws, capture_output=True, timeout=10, check=False)
    return sorted(p.name for p in tmp_path.iterdir() if p.name != "ws") + sorted(
        p.name for p in ws.iterdir()
    )


# --- critical: here-documents inside arithmetic ---------------------------------------------

HIDDEN_BY_ARITHMETIC = [
    "git status $((1 <<x))\ntouch ../PWNED\nx",
    "git status; ((1 <<x))\ntouch ../PWNED\nx",
    "git status $[1 <<x]\ntouch ../PWNED\nx",
    "git status; for ((i = 0; i < 1 <<x; i++)); do :; done\ntouch ../PWNED\nx",
    'git status "$((1 <<x))"\ntouch ../PWNED\nx',
    "git status ${y:-$((1 <<x))}\ntouch ../PWNED\nx",
]


@pytest.mark.parametrize("command", HIDDEN_BY_ARITHMETIC)
def test_a_shift_inside_arithmetic_is_not_a_here_document(command: str, tmp_path: Path) -> None:
    """Regression: ``<<`` in ``$((…))``, ``((…))``, ``$[…]``, ``for ((…))`` hid the next lines."""
    if shutil.which("bash"):
        assert "PWNED" in _runs(command, tmp_path)  # what bash really does
    assert split_command(command).complete
    assert "touch ../PWNED" in texts(command)
    assert decide(command, deny=("Bash(touch:*)",), mode="bypass") == ("deny", "Bash(touch:*)")
    assert decide(command, allow=("Bash(git status:*)", "Bash(x)"))[0] == "deny"


def test_arithmetic_that_is_not_closed_by_two_parentheses_is_a_substitution() -> None:
    assert texts("echo $((echo a); touch p)") == ["echo a", "touch p", "echo $((echo a); touch p)"]
    assert texts("((echo a); touch p)") == ["echo a", "touch p"]
    assert texts("x=$((1 + 2))") == ["x=$((1 + 2))"]
    assert texts("echo $(( $(touch p) + 1 ))") == ["touch p", "echo $(( $(touch p) + 1 ))"]


@pytest.mark.parametrize(
    "command",
    [
        "echo $(( 'a[$(touch p)]' ))",  # single quotes do not quote inside arithmetic
        "x='a[$(touch p)]'; echo $((x))",  # a variable's value is evaluated as an expression
        "x='a[$(touch p)]'; [[ $x -eq 1 ]]",
        "x='a[$(touch p)]'; echo ${y[x]}",
        "x='a[$(touch p)]'; echo ${!x}",
        "declare -n r='a[$(touch p)]'; echo $r",
    ],
)
def test_arithmetic_that_evaluates_variables_is_opaque(command: str, tmp_path: Path) -> None:
    if shutil.which("bash"):
        assert "p" in _runs(command, tmp_path)
    assert any(s.opaque for s in split_command(command).segments)
    allow = ("Bash(x=*)", "Bash(echo:*)", "Bash([[:*)", "Bash(declare:*)")
    assert decide(command, allow=allow)[0] == "deny"
    assert decide(command, deny=("Bash(touch:*)",), mode="bypass")[0] == "deny"


# --- critical: double quotes inside ${…} -------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'git status ${x:-"}"}; touch ../PWNED #"',
        'git status "${x:-"}"}"; touch ../PWNED #"',
        "git status ${x:-{}; touch ../PWNED #}",
        "git status ${x:-$'\\'}'}; touch ../PWNED #'",
        "git status \"${x:-'}'}\"; touch ../PWNED",
    ],
)
def test_quotes_inside_a_parameter_expansion_do_not_end_it(command: str, tmp_path: Path) -> None:
    """Regression: a quoted ``}`` (or a bare ``{``) ended ``${…}`` in the wrong place."""
    if shutil.which("bash"):
        assert "PWNED" in _runs(command, tmp_path)
    assert "touch ../PWNED" in texts(command)
    assert decide(command, allow=("Bash(git status:*)",))[0] == "deny"
    assert decide(command, deny=("Bash(touch:*)",), mode="bypass")[0] == "deny"


# --- critical: one glob language for the toolkit and the engine -------------------------------


async def test_grep_cannot_read_a_denied_file_through_an_unclosed_brace(tmp_path: Path) -> None:
    """Regression: ``Read(./secret/a{b)`` was denied, ``Grep(glob="a{b")`` returned it."""
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "a{b").write_text("TOPSECRET\n")
    ws = Workspace(tmp_path)
    grep, read = Grep(ws), Read(ws)
    config = PermissionConfig.from_rules(
        deny=["Read(./secret/a{b)"], mode="bypass", workspace=tmp_path
    )
    engine = PermissionEngine(config)
    assert engine.decide(read, {"file_path": "secret/a{b"}).kind == "deny"
    arguments: dict[str, Any] = {
        "pattern": "TOP",
        "glob": "a{b",
        "path": "secret",
        "output_mode": "content",
    }
    assert "TOPSECRET" in (await invoke(grep, arguments)).text  # what the tool would read
    assert engine.decide(grep, arguments).kind == "deny"
    assert engine.decide(grep, {**arguments, "glob": "[a]{b"}).kind == "deny"
    assert engine.decide(grep, {**arguments, "glob": "a{x,y}"}).kind == "allow"


async def invoke(tool: Tool, arguments: dict[str, Any]) -> ToolResult:
    """Validate, call and convert as the loop does: the result the model sees."""
    value, error = tool.validate(arguments)
    assert error is None, error
    output = await tool.call(value, ToolContext(tool_call_id="c", tool_name=tool.name, turn_id="t"))
    return to_tool_result(ToolCall(id="c", name=tool.name, arguments=arguments), output)


SEGMENT = st.text(alphabet="ab{},[]*?!^", min_size=1, max_size=6)
NAME = st.text(alphabet="ab{},]!", min_size=1, max_size=4)  # literal in rule syntax


@settings(max_examples=400, deadline=None)
@given(
    st.lists(SEGMENT, min_size=1, max_size=3).map("/".join),
    st.lists(NAME, min_size=1, max_size=3),
)
def test_what_a_search_glob_reads_is_what_the_engine_thinks_it_reaches(
    pattern: str, names: list[str]
) -> None:
    """The engine's reach and the toolkit's matching are one implementation: they agree."""
    path = "/".join(names)
    if not glob_regex(pattern).match(path):
        return
    denied = "./" + path
    config = PermissionConfig.from_rules(deny=[f"Read({denied})"], mode="bypass", workspace=ROOT)
    grep = FunctionTool(
        _shell,
        name="Grep",
        annotations=ToolAnnotations(read_only=True),
        metadata={ARGUMENT_KEY: "path", KIND_KEY: "path"},
    )
    arguments = {"pattern": "x", "glob": pattern, "path": "."}
    assert PermissionEngine(config).decide(grep, arguments).kind == "deny", (pattern, path)


# --- deny rules see plain forms and more wrappers ---------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "/bin/rm -rf x",
        "/usr/bin/env rm -rf x",
        "./../../bin/rm x",
        "coproc rm x",
        "coproc w { rm x; }",
        "taskset 0x1 rm x",
        "taskset -c 0 rm x",
        "chrt -f 1 rm x",
        "chrt 0 rm x",
        "flock /tmp/l rm x",
        "flock -n /tmp/l -c 'rm x'",
        "unshare -r rm x",
        "unshare --map-root-user --fork rm x",
        "setpriv --reuid=1000 rm x",
        "setpriv --nnp rm x",
        "strace -f -o /dev/null rm x",
        "script -q -c 'rm x' /dev/null",
        "script --command 'rm x'",
        "busybox rm x",
        "busybox sh -c 'rm x'",
        "chroot / rm x",
        "nsenter -t 1 -m rm x",
        "ltrace rm x",
        "prlimit --nofile=10 rm x",
    ],
)
def test_deny_rules_see_the_command_behind_paths_and_wrappers(command: str) -> None:
    """Regression: ``/bin/rm``, ``coproc`` and these wrappers hid ``rm`` from ``Bash(rm:*)``."""
    assert decide(command, deny=("Bash(rm:*)",), mode="bypass") == ("deny", "Bash(rm:*)")


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("env rm -rf x", ("Bash(env:*)",)),
        ("env FOO=1 rm -rf x", ("Bash(env:*)",)),
        ("timeout 5 rm -rf x", ("Bash(timeout:*)",)),
        ("xargs rm -rf", ("Bash(xargs:*)",)),
        ("find . -exec rm {} \\;", ("Bash(find:*)",)),
        ("nice -n 5 rm x", ("Bash(nice:*)",)),
        ("sudo rm x", ("Bash(sudo:*)",)),
        ("sed e", ("Bash(sed:*)",)),
        ("sed -n 'e touch p'", ("Bash(sed:*)",)),
        ("sed 's/x/touch p/e' f", ("Bash(sed:*)",)),
        ("sed -e 1d -e 's/a/b/ge' f", ("Bash(sed:*)",)),
        ("sed --expression='1e touch p' f", ("Bash(sed:*)",)),
        ("sed -f script.sed f", ("Bash(sed:*)",)),
        ("sed 'w /tmp/out' f", ("Bash(sed:*)",)),
    ],
)
def test_allow_rules_on_wrappers_do_not_allow_what_they_wrap(
    command: str, allow: tuple[str, ...]
) -> None:
    """Regression: ``Bash(env:*)`` allowed ``env rm -rf x``, ``Bash(sed:*)`` allowed ``sed e``."""
    assert decide(command, allow=allow)[0] == "deny"


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("env git status", ("Bash(env:*)", "Bash(git status:*)")),
        ("timeout 5 git status", ("Bash(timeout:*)", "Bash(git status:*)")),
        ("find . -name '*.py' -exec grep -l x {} +", ("Bash(find:*)", "Bash(grep:*)")),
        ("find . -name '*.py'", ("Bash(find:*)",)),
        ("sed -n '1,10p' f", ("Bash(sed:*)",)),
        ("sed -e 's/a/b/g' -e '/x/d' f", ("Bash(sed:*)",)),
        ("sed -i.bak 's/e/E/2' f", ("Bash(sed:*)",)),
        ("sed 'y/abc/xyz/;s/e/w/' f", ("Bash(sed:*)",)),
        ("/usr/bin/git status", ("Bash(/usr/bin/git status:*)",)),
    ],
)
def test_allow_rules_on_wrappers_allow_what_is_allowed_inside(
    command: str, allow: tuple[str, ...]
) -> None:
    assert decide(command, allow=allow)[0] == "allow"


# --- bypass mode: an opaque command does not run when a deny rule names the tool --------------

OPAQUE = [
    "$X -rf /",
    "{r,}m -rf /",
    ". /dev/stdin <<< 'rm -rf /'",
    "bash <(echo rm -rf /)",
    "shopt -s expand_aliases\nalias x='$R'\nx -rf /",
    'mapfile -C "$(echo cm0gLXJmIC8K | base64 -d)" -c 1 a <<< x',
    'eval "$(echo cm0gLXJmIC8K | base64 -d)"',
]


@pytest.mark.parametrize("command", OPAQUE)
@pytest.mark.parametrize(
    ("mode", "expect"),
    [("bypass", "deny"), ("dont_ask", "deny"), ("default", "ask"), ("accept_edits", "ask")],
)
def test_an_opaque_command_never_runs_unasked_under_a_deny_rule(
    command: str, mode: PermissionMode, expect: str
) -> None:
    """Regression: ``bypass`` ran opaque commands although ``Bash(rm:*)`` was denied."""
    assert (
        any(s.opaque for s in split_command(command).segments)
        or not split_command(command).complete
    )
    kind, rule = decide(command, deny=("Bash(rm:*)",), allow=("Bash",), mode=mode)
    assert kind == expect
    assert rule == "Bash(rm:*)"


@pytest.mark.parametrize(
    "command", ["shopt -s expand_aliases\nalias x='rm -rf /'\nx", "mapfile -C 'rm -rf /;:' a"]
)
def test_the_code_of_an_alias_or_a_mapfile_callback_is_read_by_deny_rules(command: str) -> None:
    assert decide(command, deny=("Bash(rm:*)",), allow=("Bash",), mode="default")[0] == "deny"


def test_an_opaque_command_runs_when_no_deny_rule_names_the_tool() -> None:
    assert decide("$X -rf /", deny=("Read(./x)",), mode="bypass")[0] == "allow"
    assert decide("$X -rf /", mode="bypass")[0] == "allow"


def test_an_exact_grant_of_an_opaque_command_still_runs_it_under_a_deny_rule() -> None:
    config = PermissionConfig.from_rules(deny=["Bash(rm:*)"], mode="bypass", workspace=ROOT)
    engine = PermissionEngine(config)
    engine.grants_for_call(BASH, {"command": "$X status"})
    assert engine.decide(BASH, {"command": "$X status"}).kind == "allow"
    assert engine.decide(BASH, {"command": "$Y status"}).kind == "deny"


# --- name arguments with a subscript run code --------------------------------------------------


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("printf -v 'a[$(touch p)]' x", "Bash(printf:*)"),
        ("read 'a[$(touch p)]' <<< x", "Bash(read:*)"),
        ("declare 'a[$(touch p)]=x'", "Bash(declare:*)"),
        ("typeset 'a[$(touch p)]=x'", "Bash(typeset:*)"),
        ("test -v 'a[$(touch p)]'", "Bash(test:*)"),
        ("[ -v 'a[$(touch p)]' ]", "Bash([:*)"),
        ("[[ -v 'a[$(touch p)]' ]]", "Bash([[:*)"),
        ("let 'a[$(touch p)]=1'", "Bash(let:*)"),
    ],
)
def test_a_name_argument_with_a_subscript_is_opaque(
    command: str, allow: str, tmp_path: Path
) -> None:
    """Regression: ``Bash(printf:*)`` allowed ``printf -v 'a[$(cmd)]' x``, which runs ``cmd``."""
    if shutil.which("bash"):
        assert "p" in _runs(command, tmp_path)
    assert decide(command, allow=(allow,))[0] == "deny"
    assert decide(command, deny=("Bash(touch:*)",), mode="bypass")[0] == "deny"


def test_plain_name_arguments_stay_allowed() -> None:
    assert decide("printf -v x '%s' 1", allow=("Bash(printf:*)",))[0] == "allow"
    assert decide("test -f a.txt", allow=("Bash(test:*)",))[0] == "allow"
    assert decide("read -r line < f", allow=("Bash(read:*)",))[0] == "allow"


# --- Edit rules cover Write -------------------------------------------------------------------


def test_edit_rules_cover_write(tmp_path: Path) -> None:
    """Regression: ``Edit(...)`` rules did not apply to ``Write`` (they do in Claude Code)."""
    write = Write(Workspace(tmp_path))
    config = PermissionConfig.from_rules(
        deny=["Edit(./secrets/**)"], allow=["Edit(./src/**)"], mode="dont_ask", workspace=tmp_path
    )
    engine = PermissionEngine(config)
    denied = engine.decide(write, {"file_path": "secrets/k", "content": "x"})
    assert (denied.kind, denied.rule) == ("deny", "Edit(./secrets/**)")
    allowed = engine.decide(write, {"file_path": "src/a.py", "content": "x"})
    assert (allowed.kind, allowed.rule) == ("allow", "Edit(./src/**)")
    assert engine.decide(write, {"file_path": "other.py", "content": "x"}).kind == "deny"
    asked = PermissionEngine(PermissionConfig.from_rules(ask=["Edit"], workspace=tmp_path)).decide(
        write, {"file_path": "a", "content": "x"}
    )
    assert (asked.kind, asked.rule) == ("ask", "Edit")


# --- WebFetch: plan mode refuses it, default mode asks per new domain -------------------------


def _fetch() -> Tool:
    return FunctionTool(
        _shell,
        name="WebFetch",
        annotations=ToolAnnotations(read_only=True, open_world=True),
        metadata={ARGUMENT_KEY: "url", KIND_KEY: "url"},
    )


def test_plan_mode_refuses_webfetch() -> None:
    """Regression: plan mode allowed ``WebFetch``, an ``external_side_effect`` tool."""
    engine = PermissionEngine(PermissionConfig.from_rules(mode="plan", workspace=ROOT))
    decision = engine.decide(_fetch(), {"url": "https://example.com/"})
    assert (decision.kind, decision.rule) == ("deny", "mode:plan")


def test_default_mode_asks_per_new_domain() -> None:
    """Regression: in default mode WebFetch never asked (an exfiltration channel)."""
    fetch = _fetch()
    engine = PermissionEngine(
        PermissionConfig.from_rules(allow=["WebFetch(domain:docs.python.org)"], workspace=ROOT)
    )
    asked = engine.decide(fetch, {"url": "https://evil.example/?k=secret"})
    assert (asked.kind, asked.decided_by) == ("ask", "mode")
    assert engine.decide(fetch, {"url": "https://docs.python.org/3/"}).kind == "allow"
    engine.grants_for_call(fetch, {"url": "https://evil.example/a"})
    assert engine.decide(fetch, {"url": "https://evil.example/b"}).kind == "allow"
    assert engine.decide(fetch, {"url": "https://other.example/"}).kind == "ask"
    bypass = PermissionEngine(PermissionConfig.from_rules(mode="bypass", workspace=ROOT))
    assert bypass.decide(fetch, {"url": "https://evil.example/"}).kind == "allow"


# --- refusals do not reveal where a path outside the root resolves ----------------------------


async def test_a_refusal_does_not_reveal_a_resolved_path_outside_the_root(tmp_path: Path) -> None:
    """Regression: the refusal said ``it resolves to /usr/bin/mawk``."""
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    hidden = tmp_path / "hidden-place-8f3a"
    hidden.mkdir()
    (ws_dir / "link").symlink_to(hidden / "target-name-91c2")
    read = Read(Workspace(ws_dir))
    result = await invoke(read, {"file_path": "link"})
    assert result.is_error
    text = result.text
    assert "outside the workspace" in text
    assert "hidden-place-8f3a" not in text
    assert "target-name-91c2" not in text
