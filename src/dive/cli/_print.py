"""``dive run "prompt"``: one turn, printed for a script to read.

The prompt is the argument, or stdin when there is none (or it is ``-``). Formats:
``text`` prints the final answer; ``json`` prints one result object; ``stream-json`` prints
one JSON object per line — a ``start`` line, each event, then the result object last.
Nothing but that goes to stdout: the offline notice and problems go to stderr, one line
each. There is no one to ask, so a call the permission engine would ask about suspends the
turn (exit 3); ``dive chat --resume ID`` answers it in place. Exit codes: 0 completed,
1 incomplete, 2 usage error, 3 suspended.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal

from dive.agent import AgentEvent, RunResult
from dive.cli._errors import EXIT_FAILED, EXIT_OK, EXIT_SUSPENDED, EXIT_USAGE, CliError, say
from dive.cli._jsonout import dumps, event_object, result_object, start_object
from dive.cli._pick import pick_session
from dive.cli._runtime import open_runtime
from dive.cli._settings import CliSettings

__all__ = ["OutputFormat", "exit_code", "read_prompt", "run_print"]

OutputFormat = Literal["text", "json", "stream-json"]


def read_prompt(argument: str | None) -> str:
    """The prompt: the argument, else stdin (when it is not a terminal, or given as ``-``).

    Raises:
        CliError: no prompt at all (a usage error).
    """
    if argument is not None and argument != "-":
        if not argument.strip():
            raise CliError("the prompt is empty", EXIT_USAGE)
        return argument
    if argument == "-" or not sys.stdin.isatty():
        text = sys.stdin.read()
        if text.strip():
            return text.rstrip("\n")
    raise CliError('no prompt: pass one (dive run "…") or pipe it on stdin', EXIT_USAGE)


def exit_code(result: RunResult[Any]) -> int:
    """0 completed, 3 suspended, 1 incomplete."""
    if result.status == "completed":
        return EXIT_OK
    if result.status == "suspended":
        return EXIT_SUSPENDED
    return EXIT_FAILED


def _explain(result: RunResult[Any], session_id: str) -> None:
    """One stderr line for a turn that did not complete (or was not saved)."""
    if result.status == "suspended" and result.turn.suspension is not None:
        first = result.turn.suspension.pending_tool_calls[0]
        count = len(result.turn.suspension.pending_tool_calls)
        say(
            f"suspended ({first.reason}, {count} pending): {first.prompt or first.name}; "
            f"answer in place with `dive chat --resume {session_id}`"
        )
    elif result.status == "incomplete":
        say(f"{str(result).split(' · ')[0]} (session {session_id})")
    if result.save_error is not None:
        say(f"the turn was not saved: {result.save_error}")


def _write(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _stream_event(event: AgentEvent) -> None:
    _write(dumps(event_object(event)))


async def run_print(
    settings: CliSettings,
    prompt: str,
    *,
    output_format: OutputFormat = "text",
    session: str | None = None,
    continue_last: bool = False,
    resume: str | None = None,
) -> int:
    """Run one turn and print it; returns the exit code.

    Args:
        settings: the merged settings.
        prompt: the user's message.
        output_format: ``text``, ``json`` or ``stream-json``.
        session: ``--session ID`` (created when missing).
        continue_last: ``--continue``.
        resume: ``--resume ID`` (must exist).
    """
    async with open_runtime(settings) as rt:
        if rt.choice.notice:
            say(rt.choice.notice)
        picked = await pick_session(
            rt.store,
            session=session,
            continue_last=continue_last,
            resume=resume,
            db=str(settings.db),
        )
        sid = picked.session.id
        on_event: Callable[[AgentEvent], None] | None = None
        if output_format == "stream-json":
            _write(dumps(start_object(session_id=sid, new=picked.new, choice=rt.choice)))
            on_event = _stream_event
        result = await rt.agent.run(prompt, session=picked.session, on_event=on_event)
        _explain(result, sid)
        if output_format == "text":
            if result.output_text:
                _write(result.output_text)
        else:
            _write(dumps(result_object(result, session_id=sid, choice=rt.choice)))
        return exit_code(result)
