"""``dive chat`` driven in a pseudo-terminal (pexpect), offline against the simulator."""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest

from tests._cli import DIVE, cli_env, dive

PROMPT = "›"
TIMEOUT = 60


def _spawn(home: Path, work: Path, *args: str, term: str = "xterm-256color") -> pexpect.spawn[str]:
    env = cli_env(home, TERM=term, PROMPT_TOOLKIT_NO_CPR="1")
    env.pop("NO_COLOR")
    child: pexpect.spawn[str] = pexpect.spawn(
        DIVE[0],
        [*DIVE[1:], "chat", *args],
        cwd=str(work),
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    # Keys sent before prompt-toolkit takes the terminal (raw mode) may be flushed: give it a
    # moment after each prompt appears (this bounds nothing; it only avoids lost keys).
    child.delaybeforesend = 0.3
    child.expect(PROMPT)
    return child


def _send(child: pexpect.spawn[str], line: str) -> None:
    child.send(line + "\r")  # Enter is a carriage return in raw mode


def _quit(child: pexpect.spawn[str]) -> int:
    _send(child, "/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def test_a_chat_with_a_tool_a_grant_cost_and_a_soft_cancel(places: tuple[Path, Path]) -> None:
    home, work = places
    child = _spawn(home, work, "--session", "chat1")
    _send(child, "hello")
    child.expect("offline demo model")
    child.expect(PROMPT)

    _send(child, "run `echo hi-there`")
    child.expect(r'Allow calling "Bash" with command "echo hi-there"')
    child.expect(r"\[a\] allow for this session")
    _send(child, "a")
    child.expect("hi-there")
    child.expect("Here is what the tools returned")
    child.expect(PROMPT)

    _send(child, "run `echo hi-there`")  # granted for the session: no question this time
    index = child.expect(["Allow calling", "Here is what the tools returned"])
    assert index == 1
    child.expect(PROMPT)

    _send(child, "/cost")
    child.expect(r"session chat1: input [\d,]+ .* output \d+ .* (\d+) requests · \$(\d+\.\d+)")
    match = child.match
    assert isinstance(match, re.Match)
    assert float(match.group(2)) > 0
    child.expect(PROMPT)

    _send(child, "run `sleep 2 && echo slept-through`")
    child.expect(r"\[a\] allow for this session")
    _send(child, "y")
    child.expect("running Bash")
    child.sendintr()  # Ctrl-C once: the running command finishes, then the turn stops
    child.expect("stopping after the current step")
    child.expect("slept-through")
    child.expect(r"incomplete \(canceled\)")
    child.expect(PROMPT)
    assert _quit(child) == 0

    shown = dive("sessions", "show", "chat1", "--json", cwd=work, home=home)
    statuses = [line.split('"status":"')[1].split('"')[0] for line in shown.stdout.splitlines()]
    assert statuses == ["completed", "completed", "completed", "incomplete"]


def test_resuming_a_session_in_a_new_process(places: tuple[Path, Path]) -> None:
    home, work = places
    child = _spawn(home, work, "--session", "keep")
    _send(child, "my name is Ada")
    child.expect("Nice to meet you, Ada")
    child.expect(PROMPT)
    assert _quit(child) == 0

    child = _spawn(home, work, "--resume", "keep")
    assert "my name is Ada" in (child.before or "")  # the earlier turn, shown before the prompt
    _send(child, "what is my name?")
    child.expect("Earlier in this session you said")
    child.expect("my name is Ada")
    child.expect(PROMPT)
    assert _quit(child) == 0


def test_suspended_turns_are_answered_in_place(places: tuple[Path, Path]) -> None:
    home, work = places
    printed = dive("run", "--session", "held", "run `echo from-print-mode`", cwd=work, home=home)
    assert printed.returncode == 3, printed.stderr

    child = _spawn(home, work, "--resume", "held")  # the approval the print run could not ask
    assert 'Allow calling "Bash" with command "echo from-print-mode"' in (child.before or "")
    _send(child, "y")
    child.expect("from-print-mode")
    child.expect(PROMPT)

    _send(child, "ask me which colour to use")  # AskUser suspends; answered right here
    child.expect("which colour to use")
    child.expect("answer")
    _send(child, "teal")
    child.expect(r"AskUser.*returned: .*teal")
    child.expect(PROMPT)
    assert _quit(child) == 0


def test_a_dumb_terminal_gets_no_colour_but_still_a_prompt(places: tuple[Path, Path]) -> None:
    home, work = places
    child = _spawn(home, work, term="dumb")
    _send(child, "what is 6 * 7")
    child.expect("42")
    child.expect(PROMPT)
    seen = child.before or ""
    assert not re.search(r"\x1b\[[0-9;]*m", seen), repr(seen)  # no colour codes
    child.send("\x04")  # Ctrl-D quits (send, unlike sendeof, waits delaybeforesend)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_compact_summarises_the_session(places: tuple[Path, Path]) -> None:
    pytest.importorskip("dive.compaction")
    home, work = places
    child = _spawn(home, work)
    _send(child, "my name is Ada")
    child.expect(PROMPT)
    _send(child, "/compact")
    child.expect("compacted")
    child.expect(PROMPT)
    assert _quit(child) == 0
