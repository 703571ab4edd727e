"""``dive chat`` driven in a pseudo-terminal (pexpect), offline against the simulator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pexpect
import pytest

from tests._cli import PROMPT, dive, quit_chat, send, spawn_chat


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def test_a_chat_with_a_tool_a_grant_cost_and_a_soft_cancel(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, "--session", "chat1")
    send(child, "hello")
    child.expect("offline demo model")
    child.expect(PROMPT)

    send(child, "run `echo hi-there`")
    child.expect(r'Allow calling "Bash" with command "echo hi-there"')
    child.expect(r"\[a\] allow for this session")
    send(child, "a")
    child.expect("hi-there")
    child.expect("Here is what the tools returned")
    child.expect(PROMPT)

    send(child, "run `echo hi-there`")  # granted for the session: no question this time
    index = child.expect(["Allow calling", "Here is what the tools returned"])
    assert index == 1
    child.expect(PROMPT)

    send(child, "/cost")
    child.expect(r"session chat1: input [\d,]+ .* output \d+ .* (\d+) requests · \$(\d+\.\d+)")
    match = child.match
    assert isinstance(match, re.Match)
    assert float(match.group(2)) > 0
    child.expect(PROMPT)

    send(child, "run `sleep 2 && echo slept-through`")
    child.expect(r"\[a\] allow for this session")
    send(child, "y")
    child.expect("running Bash")
    child.sendintr()  # Ctrl-C once: the running command finishes, then the turn stops
    child.expect("stopping after the current step")
    child.expect("slept-through")
    child.expect(r"incomplete \(canceled\)")
    child.expect(PROMPT)
    assert quit_chat(child) == 0

    shown = dive("sessions", "show", "chat1", "--json", cwd=work, home=home)
    statuses = [line.split('"status":"')[1].split('"')[0] for line in shown.stdout.splitlines()]
    assert statuses == ["completed", "completed", "completed", "incomplete"]


def test_resuming_a_session_in_a_new_process(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, "--session", "keep")
    send(child, "my name is Ada")
    child.expect("Nice to meet you, Ada")
    child.expect(PROMPT)
    assert quit_chat(child) == 0

    child = spawn_chat(home, work, "--resume", "keep")
    assert "my name is Ada" in (child.before or "")  # the earlier turn, shown before the prompt
    send(child, "what is my name?")
    child.expect("Earlier in this session you said")
    child.expect("my name is Ada")
    child.expect(PROMPT)
    assert quit_chat(child) == 0


def test_suspended_turns_are_answered_in_place(places: tuple[Path, Path]) -> None:
    home, work = places
    printed = dive("run", "--session", "held", "run `echo from-print-mode`", cwd=work, home=home)
    assert printed.returncode == 3, printed.stderr

    child = spawn_chat(home, work, "--resume", "held")  # the approval the print run could not ask
    assert 'Allow calling "Bash" with command "echo from-print-mode"' in (child.before or "")
    send(child, "y")
    child.expect("from-print-mode")
    child.expect(PROMPT)

    send(child, "ask me which colour to use")  # AskUser suspends; answered right here
    child.expect("which colour to use")
    child.expect("answer")
    send(child, "teal")
    child.expect(r"AskUser.*returned: .*teal")
    child.expect(PROMPT)
    assert quit_chat(child) == 0


def test_a_dumb_terminal_gets_no_colour_but_still_a_prompt(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, term="dumb")
    send(child, "what is 6 * 7")
    child.expect("42")
    child.expect(PROMPT)
    seen = child.before or ""
    assert not re.search(r"\x1b\[[0-9;]*m", seen), repr(seen)  # no colour codes
    child.send("\x04")  # Ctrl-D quits (send, unlike sendeof, waits delaybeforesend)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_compact_summarises_the_session_and_the_chat_goes_on_from_it(
    places: tuple[Path, Path],
) -> None:
    home, work = places
    child = spawn_chat(home, work, "--session", "long")
    send(child, "/compact")
    child.expect("nothing to compact yet")
    child.expect(PROMPT)
    for line in ("hello", "my name is Ada", "what is 6 * 7", "list the files"):
        send(child, line)
        child.expect(PROMPT)
    send(child, "/compact names")
    child.expect(r"compacted (\d+) message\(s\): [\d,]+ → [\d,]+ tokens .* cost \$(\d+\.\d+)")
    match = child.match
    assert isinstance(match, re.Match)
    assert int(match.group(1)) >= 4
    assert float(match.group(2)) > 0  # the summariser's request is priced too
    child.expect("the user said: my name is Ada")
    child.expect(PROMPT)
    send(child, "what did I say before?")  # the model now reads the summary, not the turns
    child.expect("Earlier in this session you said")
    child.expect("my name is Ada")
    child.expect(PROMPT)
    assert quit_chat(child) == 0

    shown = dive("sessions", "show", "long", "--json", cwd=work, home=home)
    assert len(shown.stdout.splitlines()) == 5  # every original turn record is kept


def test_tools_model_sessions_help_and_clear(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, "--session", "first")
    send(child, "/help")
    for name in ("/help", "/clear", "/compact", "/cost", "/model", "/resume", "/sessions",
                 "/tools", "/quit"):  # fmt: skip
        child.expect_exact(name)
    child.expect(PROMPT)
    send(child, "/tools")
    child.expect(r"Read\s+read-only")
    child.expect(r"Bash\s+asks first")
    child.expect("permission mode: default")
    child.expect(PROMPT)
    send(child, "/model")
    child.expect(r"model: anthropic:claude-sonnet-4-6 \(offline simulator\)")
    child.expect(PROMPT)
    send(child, "/model anthropic:claude-haiku-4-5")
    child.expect("offline: ")
    child.expect(r"model: anthropic:claude-haiku-4-5 \(offline simulator\)")
    child.expect(PROMPT)
    send(child, "/model nope:x")
    child.expect("/model: unknown provider 'nope'")
    child.expect(PROMPT)
    send(child, "hello")
    child.expect("offline demo model")
    child.expect(PROMPT)
    send(child, "/clear")
    child.expect(r"new session (\S+) \(the previous one is kept: /resume first\)")
    child.expect(PROMPT)
    send(child, "/sessions")
    child.expect(r"first\s+\S+ \S+\s+1")
    child.expect(PROMPT)
    send(child, "/resume nope")
    child.expect("no session nope")
    child.expect(PROMPT)
    send(child, "/resume first")
    child.expect("session first: 1 turn")
    child.expect(PROMPT)
    send(child, "/nope")
    child.expect("unknown command /nope")
    child.expect(PROMPT)

    send(child, "what is 6 * 7 \\")  # a trailing backslash: Enter starts a new line
    send(child, "my name is Ada")  # one message of two lines
    child.expect("42")
    child.expect("Nice to meet you, Ada")
    child.expect(PROMPT)
    child.send("\x1b[A")  # Up: the history gives the last message back
    send(child, "")
    child.expect("Nice to meet you, Ada")
    child.expect(PROMPT)
    assert quit_chat(child) == 0
    shown = dive("sessions", "show", "first", "--json", cwd=work, home=home)
    asks = [json.loads(line)["messages"][0] for line in shown.stdout.splitlines()]
    texts = [block["text"] for m in asks for block in m["content"]]
    assert texts[-2:] == ["what is 6 * 7 \nmy name is Ada"] * 2


def test_deny_and_a_hard_cancel(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, "--session", "hard")
    send(child, "run `echo refused-one`")
    child.expect(r"\[n\] deny")
    send(child, "n")
    child.expect("did not succeed")
    child.expect(PROMPT)

    send(child, "run `sleep 30 && echo never-printed`")
    child.expect(r"\[n\] deny")
    send(child, "y")
    child.expect("running Bash")
    child.sendintr()
    child.expect("stopping after the current step")
    child.sendintr()  # twice: stop now, the command is killed
    child.expect("stopping now")
    child.expect(r"incomplete \(canceled\)")
    child.expect(PROMPT)
    assert "never-printed" not in (child.before or "")
    assert quit_chat(child) == 0
    shown = dive("sessions", "show", "hard", "--json", cwd=work, home=home)
    records = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [r["status"] for r in records] == ["completed", "incomplete"]
    [call] = records[1]["tool_calls"]
    assert call["name"] == "Bash"
    assert call["state"] != "completed"  # stopped, not waited for


def test_thinking_streams_dimmed(places: tuple[Path, Path]) -> None:
    home, work = places
    child = spawn_chat(home, work, "--thinking", "enabled")
    send(child, "list the files")
    dim = r"\x1b\[(?:[0-9;]*;)?2(?:;[0-9;]*)?m"  # SGR 2
    child.expect(dim + r"[^\x1b]*The user asked")
    child.expect("Here is what the tools returned")
    child.expect(PROMPT)
    assert quit_chat(child) == 0
