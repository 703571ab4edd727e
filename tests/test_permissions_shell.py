"""Shell-aware command splitting: operators, substitutions, quotes, and what rules see."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

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
        ("x=$((1 + 2))", ["x=$((1 + 2))"]),  # arithmetic, not a subshell (issue 23)
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
            and c.split(" ")[0] not in ("trap", "watch")  # their argument is code, split too
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


# --- regressions from the security review -----------------------------------------------------


def allows_echo(command: str) -> bool:
    return decide(command, allow=("Bash(echo:*)",)) == "allow"


def test_a_backslash_newline_is_removed_so_a_hash_after_it_is_not_a_comment() -> None:
    """Regression: ``\\<newline>`` became a space, so ``#`` after it started a comment."""
    command = "echo hi\\\n#; touch /tmp/p"
    assert texts(command) == ["echo hi#", "touch /tmp/p"]
    assert not allows_echo(command)
    assert texts("r\\\nm -rf /") == ["rm -rf /"]


def test_ansi_c_quotes_end_at_an_unescaped_quote() -> None:
    """Regression: ``$'...'`` was read as a plain single-quoted string (``\\'`` ended it)."""
    command = "echo hi $'\\'' ; touch /tmp/p ; #'"
    assert texts(command) == ["echo hi $'\\''", "touch /tmp/p"]
    assert not allows_echo(command)
    assert texts("echo $'a ; b'") == ["echo $'a ; b'"]
    assert not split_command("echo $'a\\'").complete


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("$'\\x72\\x6d' -rf /", ("rm", "-rf", "/")),
        ("$'\\162m' x", ("rm", "x")),
        ("$'\\u0072m' x", ("rm", "x")),
        ("echo $'a\\tb\\n' $'\\cA'", ("echo", "a\tb\n", "\x01")),
        ('echo $"a ; b"', ("echo", "a ; b")),
    ],
)
def test_ansi_c_and_locale_quotes_are_decoded_into_words(
    command: str, words: tuple[str, ...]
) -> None:
    [segment] = split_command(command).segments
    assert segment.words == words


def test_a_locale_quoted_string_is_one_word() -> None:
    assert texts('echo $"a ; touch p"') == ['echo $"a ; touch p"']


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("echo hi >&2x", True),  # regression: ``>&2x`` creates the file ``2x``
        ("echo hi >&2", False),
        ("echo hi >& 2", False),
        ("echo hi 1>&2-", False),
        ("echo hi >&-x", True),
        ("echo hi <&0", False),
        ("echo hi <> f", True),
        ("echo hi >'/dev/null'", False),
        ("echo hi > $F", True),
    ],
)
def test_descriptor_targets_must_be_whole_words(command: str, writes: bool) -> None:
    [segment] = split_command(command).segments
    assert segment.writes is writes


def test_a_redirection_without_a_target_does_not_parse() -> None:
    assert not split_command("echo hi >").complete
    assert not split_command("echo hi > ; ls").complete


NO_RM_DENY = ("Bash(rm:*)",)


@pytest.mark.parametrize(
    "command",
    [
        'FOO="a b" rm -rf /',
        "FOO='a b' BAR=$(x) rm -rf /",
        '"rm" -rf /',
        "r''m -rf /",
        '"r"m -rf /',
        "\\rm -rf /",
        "r\\\nm -rf /",
        "$'rm' -rf /",
        "sudo -u root rm -rf /",
        "sudo --user=root -E rm -rf /",
        "sudo -- rm -rf /",
        "env -i rm -rf /",
        "env -u HOME -C /tmp FOO=1 rm -rf /",
        "env - rm -rf /",
        "command -p rm -rf /",
        "time -p rm -rf /",
        "nice -n 5 rm -rf /",
        "nice -5 rm -rf /",
        "timeout -s KILL 10 rm -rf /",
        "xargs rm",
        "xargs -0 -n 1 rm",
        "xargs -I{} rm {}",
        "find . -name x -exec rm {} \\;",
        "find . -execdir rm -f {} +",
        "exec rm -rf /",
        "exec -a name rm -rf /",
        "nohup stdbuf -o0 setsid rm -rf /",
        "sudo --frobnicate x rm -rf /",  # an option sudo does not have: both readings tried
        "function f { rm x; }; f",
        "function f() { rm x; }; f",
        "f() { rm x; }; f",
        "f() ( rm x ); f",
        "(rm x)",
        "{ rm x; }",
        "! rm x",
        "if true; then rm x; fi",
        ">out rm x",
        "2>/dev/null rm x",
        "bash -c 'rm -rf /'",
        "bash -xc 'rm -rf /'",
        "sudo sh -c 'rm -rf /'",
        "eval 'rm -rf /'",
        "env -S 'rm -rf /'",
        "su -c 'rm -rf /' root",
        "bash <<< 'rm -rf /'",
        "bash <<EOF\nrm -rf /\nEOF",
        "sh <<-'EOF'\n\trm -rf /\n\tEOF",
        "cat <<EOF\n$(rm -rf /)\nEOF",
        "find . -exec sh -c 'rm -rf \"$1\"' _ {} \\;",
    ],
)
def test_deny_rules_see_the_command_the_shell_runs(command: str) -> None:
    """Regression: deny rules matched the raw text, so quoting, options and bodies hid ``rm``."""
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    decision = PermissionEngine(config).decide(BASH, {"command": command})
    assert (decision.kind, decision.rule) == ("deny", "Bash(rm:*)")


@pytest.mark.parametrize(
    "command",
    [
        "echo rm -rf /",
        "git rm x",
        "sudo -E git rm x",
        "echo 'rm -rf /'",
        "cat <<'EOF'\n$(rm -rf /)\nEOF",
        "cat <<EOF\nrm -rf /\nEOF",
        "find . -name rm",
        "rmdir x",
        "echo \\$\\(rm -rf /\\)",
    ],
)
def test_deny_rules_do_not_match_mere_arguments(command: str) -> None:
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "allow"


@pytest.mark.parametrize(
    ("command", "allow"),
    [
        ("eval 'git status'", ("Bash(eval:*)", "Bash(git status:*)")),
        ("bash -c 'git status'", ("Bash(bash:*)", "Bash(git status:*)")),
        ("sh -c 'git status'", ("Bash(sh *)", "Bash(git status:*)")),
        ("bash", ("Bash(bash:*)",)),
        ("echo git status | bash", ("Bash(echo:*)", "Bash(bash:*)")),
        ("bash <<< 'git status'", ("Bash(bash:*)", "Bash(git status:*)")),
        ("bash <<EOF\ngit status\nEOF", ("Bash(bash:*)", "Bash(git status:*)")),
        ("source ./env.sh", ("Bash(source:*)",)),
        (". ./env.sh", ("Bash(. ./env.sh)",)),
        ("env -S 'git status'", ("Bash(env:*)", "Bash(git status:*)")),
        ("$CMD status", ("Bash(* status)",)),
        ("/bin/r? -rf /", ("Bash(/bin/*)",)),
        ("trap 'rm -rf /' EXIT", ("Bash(trap:*)",)),
    ],
)
def test_opaque_commands_are_never_allowed_by_a_specifier_rule(
    command: str, allow: tuple[str, ...]
) -> None:
    assert any(s.opaque for s in split_command(command).segments)
    assert decide(command, allow=allow) == "deny"
    assert decide(command, allow=("Bash",)) == "allow"


def test_a_script_file_and_a_shell_option_query_are_not_opaque() -> None:
    assert decide("bash scripts/test.sh", allow=("Bash(bash scripts/test.sh)",)) == "allow"
    assert decide("bash --version", allow=("Bash(bash --version)",)) == "allow"


def test_heredocs_are_data_but_their_substitutions_run() -> None:
    command = "cat <<EOF\nit's $(whoami)\nEOF"
    result = split_command(command)
    assert result.complete
    assert texts(command) == ["cat <<EOF", "whoami"]
    assert texts("cat <<'EOF' > out\n$(whoami) it's\nEOF\nls") == ["cat <<'EOF' > out", "ls"]
    assert texts("cat <<-EOF\n\tit's\n\tEOF") == ["cat <<-EOF"]
    assert texts("cat <<A <<B\na'\nA\nb'\nB\necho") == ["cat <<A <<B", "echo"]
    assert decide("cat <<EOF\nit's\nEOF", allow=("Bash(cat:*)",)) == "allow"
    assert not split_command("cat <<EOF\nnever closed").complete


def test_words_drop_redirections_and_quotes() -> None:
    [segment] = split_command("FOO='a b' 2>/dev/null sudo -u root \"rm\" -rf '/x y'").segments
    assert segment.words == ("FOO=a b", "sudo", "-u", "root", "rm", "-rf", "/x y")
    assert segment.bare == "rm -rf /x y"
    assert "rm -rf /x y" in segment.views


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    "command",
    [
        "echo hi\\\n#; touch p",
        "echo hi $'\\'' ; touch p ; #'",
        "echo hi >&2x",
        'echo hi $"x" ; touch p',
        "echo a\\\n;touch p",
        "echo <<EOF\n$(touch p)\nEOF",
        "echo x # '\ntouch p",
    ],
)
def test_what_an_echo_rule_allows_bash_runs_without_touching_files(
    command: str, tmp_path: Path
) -> None:
    """Checked against a real bash: an allowed command creates no file in the directory."""
    allowed = allows_echo(command)
    subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=10, check=False
    )
    created = sorted(p.name for p in tmp_path.iterdir())
    assert not (allowed and created), (command, created)
    assert not allowed


@pytest.mark.parametrize(
    "command",
    [
        "echo 'rm -rf /' | bash",
        "cat <<EOF | sh\nrm -rf /\nEOF",
        "printf 'rm -rf /' | sh -s",
        "bash <(echo rm)",
    ],
)
def test_code_piped_into_a_shell_is_opaque_and_deny_rules_look_at_it(command: str) -> None:
    assert any(s.opaque for s in split_command(command).segments)
    if "<(" not in command:
        config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
        assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "deny"


def test_command_v_runs_nothing() -> None:
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": "command -v rm"}).kind == "allow"


def test_an_assignment_of_a_substitution_is_not_opaque() -> None:
    assert decide("x=$(date)", allow=("Bash(x=*)", "Bash(date)")) == "allow"


def test_a_redirection_before_a_keyword_keeps_its_segment() -> None:
    """Regression (found by fuzzing against bash): ``> f {`` lost its write with the keyword."""
    assert [(s.text, s.writes) for s in split_command("> \\' {").segments] == [("> \\'", True)]
    assert not allows_echo("echo ${x}\n>\t\\' {")


def test_a_special_parameter_is_two_characters() -> None:
    """Regression (found by fuzzing against bash): ``$${`` read ``${`` as an expansion."""
    [segment] = split_command("echo $${!x!->&}echo").segments
    assert segment.writes


@pytest.mark.parametrize(
    "command",
    [
        '$x"rm" -rf /',
        "$EMPTY rm -rf /",
        "$(true)rm -rf /",
        "env -i x#y=1 rm -rf /",
        "env -i =x rm -rf /",
    ],
)
def test_deny_rules_read_through_empty_expansions_and_env_assignments(command: str) -> None:
    """Regressions found by fuzzing against bash (the expansions are empty there)."""
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "deny"


def test_redirections_may_follow_each_other_without_blanks() -> None:
    """Regression (found by fuzzing against bash): ``<<<x<<<y cmd`` did not parse."""
    result = split_command("<<<x<<<'a b' rm x")
    assert result.complete
    assert [s.words for s in result.segments] == [("rm", "x")]
    assert split_command("ls >a>b 2>&1").segments[0].writes


def test_an_unparseable_command_shows_deny_rules_its_joined_lines_and_unfinished_part() -> None:
    """Regression (found by fuzzing against bash): bash ran ``touch p`` here."""
    command = "to\\\nuch p`exec echo(A='a b' $'fi`"
    assert not split_command(command).complete
    config = PermissionConfig.from_rules(deny=("Bash(touch:*)",), mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "deny"


# --- differential checks against a real bash -----------------------------------------------

PIECES = [
    *(" ", " ", "\t", "\n", "\\\n", "\\", "'", '"', "$'", '$"', "`", "$(", ")", "(", "{ "),
    *("}", ";", "&", "&&", "|", "|&", "#", ">", ">&", "2", "<<", "<<-", "<<<", "EOF", "\nEOF\n"),
    *("$x", "${", "x=", "A='a b' ", "!", "f() ", "function f ", "if ", "then ", "fi", "hi"),
    *("sudo -u root ", "env -i ", "nice -n 1 ", "exec ", "command ", "\\'", "'\\''", "-"),
]


def _bash_creates(command: str) -> list[str]:
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            ["bash", "-c", command],
            cwd=d,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
            check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        return sorted(os.listdir(d))


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from([*PIECES, "touch p"]), min_size=1, max_size=9).map("".join))
def test_an_echo_rule_never_allows_what_makes_bash_create_a_file(tail: str) -> None:
    command = "echo " + tail
    if allows_echo(command):
        assert _bash_creates(command) == [], command


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.lists(
        st.sampled_from([*PIECES, "touch p", "t'o'uch p", "to\\\nuch p", '"touch" p']),
        min_size=1,
        max_size=9,
    ).map("".join)
)
def test_a_touch_deny_rule_denies_what_makes_bash_run_touch(command: str) -> None:
    config = PermissionConfig.from_rules(deny=("Bash(touch:*)",), mode="bypass")
    if PermissionEngine(config).decide(BASH, {"command": command}).kind != "deny":
        assert "p" not in _bash_creates(command), command


def test_many_readings_stay_bounded_and_the_command_behind_leading_expansions_is_read() -> None:
    command = "$x " * 3000 + "rm -rf /"
    [segment] = split_command(command).segments
    assert segment.opaque
    assert "rm -rf /" in segment.views
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "deny"
    [wrapped] = split_command(" ".join(["sudo -A -X"] * 40) + " rm x").segments
    assert len(wrapped.views) <= 258


def test_the_quote_blind_split_notices_expansions_in_command_position() -> None:
    """Regression (found by fuzzing against bash): ``$xecho"touch" p`` after a broken part."""
    command = ' `do command <<`$xecho"rm" -rf /'
    assert not split_command(command).complete
    config = PermissionConfig.from_rules(deny=NO_RM_DENY, mode="bypass")
    assert PermissionEngine(config).decide(BASH, {"command": command}).kind == "deny"
