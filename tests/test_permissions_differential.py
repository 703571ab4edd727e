"""The splitter against bash itself: every command bash executes is a segment the rules see.

Programs are generated from a grammar mixing quotes, expansions (``${…}`` with quoted
braces), arithmetic (with ``<<`` shifts), here-documents, substitutions, compound commands
and every separator. Each command in a program is a *marker*, ``m1``, ``m2``, … (small
scripts on ``PATH`` that log their name and exit 0), so the log says exactly which commands
ran; bash's own trace (``set -x``, written to a file through ``BASH_XTRACEFD``) is kept next
to it, for the failure message. The program runs inside the Bash sandbox.

The properties: ``bash -n`` accepts every generated program, the engine parses it
completely, and every marker bash executed is the command of some segment (in some reading)
the engine found. With a few characters inserted or deleted (the program is then often not
valid bash), whatever bash still runs is stopped by a deny rule naming it in ``bypass`` mode:
matched in a segment, or refused because the command cannot be read completely.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dive.permissions import (
    ARGUMENT_KEY,
    KIND_KEY,
    PermissionConfig,
    PermissionEngine,
    split_command,
)
from dive.toolkit import Sandbox
from dive.tools import FunctionTool

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("bash") is None,
    reason="runs bash in the bubblewrap sandbox (Linux)",
)

CMD = "\x00"  # a command name, numbered into a marker once the program is drawn
MARKERS = 60

WORD = st.sampled_from(
    [
        "a",
        "'a b'",
        '"x $y"',
        "$'q\\'r'",
        "$y",
        '${y:-"}"}',
        "${y:-'}'}",
        "${y:-{}",
        "$((1 << 2))",
        '"$((3 <<1))"',
        "$[1 << 1]",
        "\\;",
        "'#'",
        "x#y",
        '"a;b"',
        "2>/dev/null",
        "<<< 'w'",
        "> out",
    ]
)


def _terminated(body: str) -> str:
    """``body`` ready for a closing keyword or brace (a here-document ends its own line)."""
    return body if body.endswith("\n") else body + "; "


def _simple(draw: st.DrawFn, depth: int) -> str:
    prefix = draw(st.sampled_from(["", "", "A=1 ", "env ", "command "]))
    words = draw(st.lists(WORD, max_size=3))
    substitution = ""
    if depth < 2 and draw(st.booleans()):
        inner = draw(_program(depth + 1))
        forms = [" $( {} )", ' "$( {} )"', " <( {} )"]  # ``$(((`` is ambiguous in bash
        if "`" not in inner and "\n" not in inner and "\\" not in inner:
            forms.append(" `{}`")
        substitution = draw(st.sampled_from(forms)).format(inner)
    return prefix + CMD + "".join(" " + w for w in words) + substitution


@st.composite
def _command(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(
        st.sampled_from(
            ["simple"] * 6 + ["heredoc", "qheredoc", "group", "subshell", "if", "for", "arith"]
        )
    )
    if kind == "simple" or depth >= 2:
        return _simple(draw, depth)
    body = draw(_program(depth + 1))
    if kind == "heredoc":
        line = draw(st.sampled_from(["text $(" + CMD + ")", 'it\'s ${y:-"}"}', "$((1<<2))"]))
        return f"{CMD} <<EOF\n{line}\nEOF\n"
    if kind == "qheredoc":
        return f"{CMD} <<'EOF'\n$({CMD}) it's\nEOF\n"
    if kind == "group":
        return "{ " + _terminated(body) + "}"
    if kind == "subshell":
        return "( " + body + " )"  # ``((`` would start arithmetic
    if kind == "if":
        return f"if {CMD}; then {_terminated(body)}fi"
    if kind == "for":
        header = draw(st.sampled_from(["for v in a 'b c'", "for ((i = 0; i < 1 << 1; i++))"]))
        return f"{header}; do {_terminated(body)}done"
    return draw(st.sampled_from(["((1 << 2))", "((y = 1 << 1))"])) + f" && {CMD}"


@st.composite
def _program(draw: st.DrawFn, depth: int = 0) -> str:
    commands = draw(st.lists(_command(depth), min_size=1, max_size=3))
    out = commands[0]
    for command in commands[1:]:
        sep = draw(st.sampled_from(["; ", " && ", " || ", " | ", " & ", "\n"]))
        out = out + command if out.endswith("\n") else out + sep + command
    return out


def _numbered(program: str) -> str:
    counter = iter(range(1, 10_000))
    return re.sub(CMD, lambda _: f"m{next(counter)}", program)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with the marker commands in ``bin/``."""
    ws = tmp_path_factory.mktemp("differential")
    bin_dir = ws / "bin"
    bin_dir.mkdir()
    for i in range(1, MARKERS + 1):
        script = bin_dir / f"m{i}"
        script.write_text(f"#!/bin/sh\necho m{i} >> {ws}/ran\n")
        script.chmod(0o755)
    return ws


def _executed(ws: Path, program: str) -> tuple[set[str], str]:
    """The markers bash runs for ``program`` inside the sandbox, and its ``set -x`` trace."""
    (ws / "trace").write_text("")
    (ws / "ran").write_text("")
    (ws / "program.sh").write_text(program)
    runner = "exec 9>>trace; BASH_XTRACEFD=9; set -x; . ./program.sh"
    argv = Sandbox().command(ws, ["/bin/bash", "-c", runner], network=False)
    env = {"PATH": f"{ws}/bin:/usr/bin:/bin", "HOME": str(ws), "LANG": "C"}
    try:  # a broken program may loop forever: what it ran until then is in the log
        subprocess.run(
            argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=5
        )
    except subprocess.TimeoutExpired:
        pass
    ran = set((ws / "ran").read_text().split())
    return ran, (ws / "trace").read_text(errors="replace")[:4000]


async def _shell(command: str) -> str:
    """A shell (fake: only its permission metadata matters here)."""
    return command


BASH = FunctionTool(_shell, name="Bash", metadata={ARGUMENT_KEY: "command", KIND_KEY: "command"})


def _denied(program: str, marker: str) -> bool:
    config = PermissionConfig.from_rules(deny=[f"Bash({marker}:*)"], mode="bypass")
    return PermissionEngine(config).decide(BASH, {"command": program}).kind == "deny"


def _heads(program: str) -> set[str]:
    heads: set[str] = set()
    for segment in split_command(program).segments:
        for view in segment.views:
            words = view.split()
            if words:
                heads.add(words[0])
    return heads


@settings(
    max_examples=int(os.environ.get("DIVE_DIFFERENTIAL_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(_program().map(_numbered))
def test_every_command_bash_runs_is_a_segment(bench: Path, program: str) -> None:
    checked = subprocess.run(
        ["bash", "-n", "-c", program], capture_output=True, timeout=10, check=False
    )
    assert checked.returncode == 0, (program, checked.stderr)
    split = split_command(program)
    assert split.complete, program
    executed, trace = _executed(bench, program)
    missing = executed - _heads(program)
    assert not missing, (program, missing, [s.text for s in split.segments], trace)
    assert all(_denied(program, m) for m in executed)


def test_the_harness_sees_what_runs(bench: Path) -> None:
    """The harness itself: a marker in a quoted here-document or a comment never runs."""
    program = "m1 <<'EOF'\n$(m2)\nEOF\nm3 $(m4) # m5\n((1 << 2)) && m6 <<< \"$(m7)\""
    executed, trace = _executed(bench, program)
    assert executed == {"m1", "m3", "m4", "m6", "m7"}
    assert "+ (( 1 << 2 ))" in trace
    assert "+ m3" in trace


@st.composite
def _mutated(draw: st.DrawFn) -> str:
    """A generated program with a few characters inserted or deleted (often not valid bash)."""
    program = draw(_program())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        at = draw(st.integers(min_value=0, max_value=len(program)))
        if draw(st.booleans()) and at < len(program):
            program = program[:at] + program[at + 1 :]
        else:
            piece = draw(
                st.sampled_from(["'", '"', "`", "$(", ")", "(", "{", "}", "\\", "<<", "#"])
            )
            program = program[:at] + piece + program[at:]
    return program


@settings(
    max_examples=int(os.environ.get("DIVE_DIFFERENTIAL_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(_mutated().map(_numbered))
def test_every_command_bash_runs_is_a_segment_even_when_the_program_is_broken(
    bench: Path, program: str
) -> None:
    """Valid or not, whatever bash runs of a program, a deny rule would have seen."""
    executed, trace = _executed(bench, program)
    missing = {m for m in executed if not _denied(program, m)}
    assert not missing, (program, missing, [s.text for s in split_command(program).segments], trace)
