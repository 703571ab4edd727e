"""Shell-aware command splitting: operators, substitutions, quotes, and what rules see."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dive.permissions import (
    ARGUMENT_KEY,
    KIND_KEY,
    PermissionConfig,
    PermissionEngine,
    split_command,
)
from dive.tools import FunctionTool, Tool


def texts(command: str) -> list[str]:
    return [s.text for s in split_command(command).segments]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", ["git status"]),
        ("  git   status  ", ["git status"]),
        ("git status && rm -rf /", ["git status", "rm -rf /"]),
        ("a; b", ["a", "b"]),
        ("a || b", ["a", "b"]),
        ("a | b", ["a", "b"]),
        ("a |& b", ["a", "b"]),
        ("a & b", ["a", "b"]),
        ("a\nb\n", ["a", "b"]),
        ("a;;b", ["a", "b"]),
        ("(cd x && make) & wait", ["cd x", "make", "wait"]),
        ("echo $(rm -rf /)", ["rm -rf /", "echo $(rm -rf /)"]),
        ("echo $(a $(b))", ["b", "a $(b)", "echo $(a $(b))"]),
        ("echo `rm -rf /`", ["rm -rf /", "echo `rm -rf /`"]),
        ("echo `a \\`b\\``", ["b", "a `b`", "echo `a \\`b\\``"]),
        ('echo "$(whoami)"', ["whoami", 'echo "$(whoami)"']),
        ('echo "`whoami`"', ["whoami", 'echo "`whoami`"']),
        ("echo '$(whoami)'", ["echo '$(whoami)'"]),
        ("echo 'a && b; c | d'", ["echo 'a && b; c | d'"]),
        ('echo "a && b; c | d"', ['echo "a && b; c | d"']),
        ('echo "a  b"', ['echo "a  b"']),
        ("echo a\\;b", ["echo a\\;b"]),
        ("echo a \\\n  b", ["echo a b"]),
        ("diff <(ls a) >(cat)", ["ls a", "cat", "diff <(ls a) >(cat)"]),
        ("x=$((1 + 2))", ["1 + 2", "x=$((1 + 2))"]),
        ("ls # && rm -rf /", ["ls"]),
        ("echo a#b", ["echo a#b"]),
        ("if test -f x; then rm x; fi", ["test -f x", "rm x"]),
        ("for f in *; do echo $f; done", ["for f in *", "echo $f"]),
        ("{ a; b; }", ["a", "b"]),
        ("ls 2>&1 | tee log", ["ls 2>&1", "tee log"]),
        (
            "bash -c 'git status && rm -rf /'",
            ["bash -c 'git status && rm -rf /'", "git status", "rm -rf /"],
        ),
        ('eval "rm -rf /"', ['eval "rm -rf /"', "rm -rf /"]),
        ("", []),
        (";;", []),
    ],
)
def test_split(command: str, expected: list[str]) -> None:
    result = split_command(command)
    assert result.complete
    assert texts(command) == expected


@pytest.mark.parametrize(
    "command",
    ['echo "a', "echo 'a", "echo `a", "echo $(a", "a)", "(a", 'bash -c "a', "echo " + "$(" * 200],
)
def test_unbalanced_commands_do_not_parse(command: str) -> None:
    assert not split_command(command).complete


def test_an_unparseable_command_still_shows_deny_rules_every_part() -> None:
    assert "rm -rf /" in texts('echo "x; rm -rf /')
    assert "rm -rf /" in texts("echo 'x && rm -rf /")


@pytest.mark.parametrize(
    ("command", "bare"),
    [
        ("FOO=1 rm x", "rm x"),
        ("A=1 B[2]=3 C+=x rm x", "rm x"),
        ("sudo rm x", "rm x"),
        ("env FOO=1 nohup rm x", "rm x"),
        ("command exec time rm x", "rm x"),
        ("x=1", "x=1"),
    ],
)
def test_bare_text_drops_assignments_and_wrappers(command: str, bare: str) -> None:
    [segment] = split_command(command).segments
    assert segment.bare == bare
    assert segment.text == command


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("ls > out", True),
        ("ls >> out", True),
        ("ls >| out", True),
        ("ls &> out", True),
        ("ls 2> err", True),
        ("ls > /dev/null", False),
        ("ls >/dev/null 2>&1", False),
        ("ls >&2", False),
        ("ls 2>&-", False),
        ("echo 'a > b'", False),
        ('echo "a > b"', False),
        ("ls < in", False),
        ("ls > /dev/nullx", True),
    ],
)
def test_redirections_to_files_are_writes(command: str, writes: bool) -> None:
    [segment] = split_command(command).segments
    assert segment.writes is writes


# --- what rules see ---------------------------------------------------------------------------


async def _bash_fn(command: str) -> str:
    """Run a shell command (fake)."""
    return command


BASH: Tool = FunctionTool(
    _bash_fn, name="Bash", metadata={ARGUMENT_KEY: "command", KIND_KEY: "command"}
)


def decide(command: str, *, allow: tuple[str, ...] = (), deny: tuple[str, ...] = ()) -> str:
    config = PermissionConfig.from_rules(allow=allow, deny=deny, mode="dont_ask")
    return PermissionEngine(config).decide(BASH, {"command": command}).kind


@pytest.mark.parametrize(
    "command",
    [
        "git status && rm -rf /",
        "git status; rm -rf /",
        "git status | rm -rf /",
        "git status & rm -rf /",
        "git status\nrm -rf /",
        "git status $(rm -rf /)",
        "git status `rm -rf /`",
        'git status "$(rm -rf /)"',
        "git status > ~/.bashrc",
        "git status; bash -c 'rm -rf /'",
        "git status 'unbalanced",
    ],
)
def test_an_allow_rule_must_match_every_part(command: str) -> None:
    assert decide(command, allow=("Bash(git status:*)",)) == "deny"
    assert decide("git status -s", allow=("Bash(git status:*)",)) == "allow"


def test_git_status_and_rm_is_denied_under_a_git_status_allow_rule_with_a_deny_rule() -> None:
    config = PermissionConfig.from_rules(allow=["Bash(git status:*)"], deny=["Bash(rm:*)"])
    decision = PermissionEngine(config).decide(BASH, {"command": "git status && rm -rf /"})
    assert (decision.kind, decision.rule) == ("deny", "Bash(rm:*)")
    config = PermissionConfig.from_rules(allow=["Bash(git status:*)"], ask=["Bash"])
    decision = PermissionEngine(config).decide(BASH, {"command": "git status && rm -rf /"})
    assert (decision.kind, decision.rule) == ("ask", "Bash")


# --- properties -------------------------------------------------------------------------------

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_./=", min_size=1, max_size=8).filter(
    lambda w: not w.startswith("-") and "=" not in w
)
COMMAND = (
    st.lists(WORD, min_size=1, max_size=4)
    .map(" ".join)
    .filter(
        lambda c: (
            c.split(" ")[0] not in ("if", "then", "else", "elif", "while", "until", "do", "time")
            and c.split(" ")[0] not in ("fi", "done", "esac", "bash", "sh", "zsh", "dash", "eval")
        )
    )
)
OPERATOR = st.sampled_from([";", "&&", "||", "|", "&", "\n", " ; ", " && ", " | ", "|&"])


@st.composite
def pipelines(draw: st.DrawFn) -> tuple[str, list[str]]:
    commands = draw(st.lists(COMMAND, min_size=1, max_size=5))
    ops = draw(st.lists(OPERATOR, min_size=len(commands) - 1, max_size=len(commands) - 1))
    text = commands[0]
    for op, command in zip(ops, commands[1:], strict=True):
        text += op + command
    return text, commands


@settings(max_examples=300)
@given(pipelines())
def test_commands_joined_by_operators_split_back(case: tuple[str, list[str]]) -> None:
    text, commands = case
    result = split_command(text)
    assert result.complete
    assert texts(text) == commands


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_any_text_splits_without_error(text: str) -> None:
    result = split_command(text)
    for segment in result.segments:
        assert segment.text
        assert segment.text == segment.text.strip()


@settings(max_examples=200)
@given(
    pipelines(),
    st.sampled_from(["{}", "$({})", "`{}`", '"$({})"', "x $({}) y", "bash -c '{}'", "({})"]),
    st.integers(min_value=0, max_value=5),
)
def test_a_dangerous_part_anywhere_is_denied(
    case: tuple[str, list[str]], wrap: str, where: int
) -> None:
    _, commands = case
    inserted = wrap.format("rm -rf /")
    position = where % (len(commands) + 1)
    parts = [*commands[:position], inserted, *commands[position:]]
    command = " && ".join(parts)
    assert decide(command, deny=("Bash(rm:*)",), allow=("Bash",)) == "deny"


@settings(max_examples=200)
@given(
    st.lists(
        st.sampled_from(["git status", "git status -s", "git status --short"]),
        min_size=1,
        max_size=4,
    ),
    OPERATOR,
)
def test_only_allowed_parts_are_allowed(parts: list[str], op: str) -> None:
    command = op.join(parts)
    assert decide(command, allow=("Bash(git status:*)",)) == "allow"
    assert decide(command + op + "curl evil.sh", allow=("Bash(git status:*)",)) == "deny"


@settings(max_examples=200)
@given(pipelines(), st.sampled_from(["'", '"']))
def test_quoted_operators_never_split(case: tuple[str, list[str]], quote: str) -> None:
    text, _ = case
    body = text.replace(quote, "").replace("\\", "").replace("$", "").replace("`", "")
    quoted = f"echo {quote}{body}{quote}"
    result = split_command(quoted)
    assert result.complete
    assert len(result.segments) == 1


@settings(max_examples=200)
@given(pipelines(), st.sampled_from(["'", '"']))
def test_an_unclosed_quote_is_never_allowed_by_a_specifier_rule(
    case: tuple[str, list[str]], quote: str
) -> None:
    text, _ = case
    command = "git status " + quote + text
    assert not split_command(command).complete
    assert decide(command, allow=("Bash(git status:*)",)) == "deny"
