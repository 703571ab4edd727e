"""The ``dive`` command: its subcommands and their flags (the work is in the other modules).

``dive`` alone starts a chat. Every command reports a failure as one ``dive: …`` line on
stderr with an exit code (``dive.cli._errors``), never a traceback.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, TextIO

import typer

from dive.cli._errors import EXIT_USAGE, CliError, exit_code_of, say
from dive.cli._options import (
    Allow,
    ContinueLast,
    Db,
    Deny,
    Effort,
    MaxRetries,
    MaxTurns,
    McpConfig,
    ModelName,
    PermissionModeName,
    Resume,
    SessionId,
    SystemPrompt,
    Thinking,
    WorkspaceDir,
    flags,
)
from dive.cli._settings import Flags, resolve_settings

__all__ = ["app", "main"]

app = typer.Typer(
    name="dive",
    help="dive: an agent in your terminal (chat, print mode, sessions, models, viewer).",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
sessions_app = typer.Typer(help="List, show, fork and remove stored sessions.")
app.add_typer(sessions_app, name="sessions")


@app.callback(invoke_without_command=True)
def _root(ctx: typer.Context) -> None:
    """dive: an agent in your terminal. With no command, starts a chat."""
    if ctx.invoked_subcommand is None:
        _chat(Flags(), session=None, continue_last=False, resume=None)


def _chat(given: Flags, *, session: str | None, continue_last: bool, resume: str | None) -> None:
    from dive.cli._chat import run_chat

    settings = resolve_settings(given)
    code = asyncio.run(
        run_chat(settings, session=session, continue_last=continue_last, resume=resume)
    )
    raise typer.Exit(code)


@app.command()
def chat(
    session: SessionId = None,
    continue_last: ContinueLast = False,
    resume: Resume = None,
    model: ModelName = None,
    workspace: WorkspaceDir = None,
    permission_mode: PermissionModeName = None,
    allow: Allow = None,
    deny: Deny = None,
    mcp_config: McpConfig = None,
    max_turns: MaxTurns = None,
    thinking: Thinking = None,
    effort: Effort = None,
    system_prompt: SystemPrompt = None,
    db: Db = None,
    max_retries: MaxRetries = None,
) -> None:
    """Chat in the terminal: streamed answers, tool calls, permission prompts, /help."""
    given = flags(
        model=model, workspace=workspace, permission_mode=permission_mode, allow=allow,
        deny=deny, mcp_config=mcp_config, max_turns=max_turns, thinking=thinking,
        effort=effort, system_prompt=system_prompt, db=db, max_retries=max_retries,
    )  # fmt: skip
    _chat(given, session=session, continue_last=continue_last, resume=resume)


OutputFormatOpt = Annotated[
    str, typer.Option("--output-format", "-o", help="text, json or stream-json.")
]


@app.command()
def run(
    prompt: Annotated[str | None, typer.Argument(help="The prompt (default: stdin).")] = None,
    output_format: OutputFormatOpt = "text",
    session: SessionId = None,
    continue_last: ContinueLast = False,
    resume: Resume = None,
    model: ModelName = None,
    workspace: WorkspaceDir = None,
    permission_mode: PermissionModeName = None,
    allow: Allow = None,
    deny: Deny = None,
    mcp_config: McpConfig = None,
    max_turns: MaxTurns = None,
    thinking: Thinking = None,
    effort: Effort = None,
    system_prompt: SystemPrompt = None,
    db: Db = None,
    max_retries: MaxRetries = None,
) -> None:
    """Run one turn and print it (exit 0 completed, 1 incomplete, 2 usage, 3 suspended)."""
    from dive.cli._print import read_prompt, run_print

    if output_format not in ("text", "json", "stream-json"):
        raise CliError("--output-format must be text, json or stream-json", EXIT_USAGE)
    given = flags(
        model=model, workspace=workspace, permission_mode=permission_mode, allow=allow,
        deny=deny, mcp_config=mcp_config, max_turns=max_turns, thinking=thinking,
        effort=effort, system_prompt=system_prompt, db=db, max_retries=max_retries,
    )  # fmt: skip
    settings = resolve_settings(given)
    text = read_prompt(prompt)
    code = asyncio.run(
        run_print(
            settings,
            text,
            output_format=output_format,  # pyright: ignore[reportArgumentType]
            session=session,
            continue_last=continue_last,
            resume=resume,
        )
    )
    raise typer.Exit(code)


@sessions_app.command("list")
def sessions_list(
    db: Db = None,
    limit: Annotated[int, typer.Option(min=1, help="How many sessions.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """The stored sessions, most recent first."""
    from dive.cli._sessions_cmd import list_sessions

    asyncio.run(list_sessions(_db(db), limit=limit, as_json=as_json))


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(metavar="ID")],
    db: Db = None,
    as_json: Annotated[bool, typer.Option("--json", help="The turn records as JSON.")] = False,
) -> None:
    """A session's conversation and the status of each turn."""
    from dive.cli._sessions_cmd import show_session

    asyncio.run(show_session(_db(db), session_id, as_json=as_json))


@sessions_app.command("fork")
def sessions_fork(
    session_id: Annotated[str, typer.Argument(metavar="ID")],
    new_id: Annotated[str | None, typer.Argument(metavar="[NEW_ID]")] = None,
    db: Db = None,
) -> None:
    """Copy a session (up to its last completed turn) under a new id."""
    from dive.cli._sessions_cmd import fork_session

    asyncio.run(fork_session(_db(db), session_id, new_id))


@sessions_app.command("rm")
def sessions_rm(
    session_id: Annotated[str, typer.Argument(metavar="ID")],
    db: Db = None,
) -> None:
    """Delete a session."""
    from dive.cli._sessions_cmd import remove_session

    asyncio.run(remove_session(_db(db), session_id))


@app.command()
def models() -> None:
    """The known providers, and which have credentials here."""
    from dive.cli._models_cmd import show_models

    show_models()


@app.command()
def serve(
    db: Annotated[Path | None, typer.Option("--db", help="SQLite sessions file.")] = None,
    dsn: Annotated[str | None, typer.Option("--dsn", help="PostgreSQL DSN instead.")] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: a free one).")] = 8765,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    agent: Annotated[
        str | None, typer.Option("--agent", help="module:factory building the agent.")
    ] = None,
    spans: Annotated[
        Path | None, typer.Option("--spans", help="Exported OpenTelemetry spans (JSON file).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="provider:model pricing ideal caching.")
    ] = None,
) -> None:
    """The web viewer over the sessions store (needs the viewer extra)."""
    from dive.cli._serve import serve_viewer

    if db is not None and dsn is not None:
        raise CliError("use --db or --dsn, not both", EXIT_USAGE)
    serve_viewer(
        db=_db(db) if dsn is None else None,
        dsn=dsn,
        host=host,
        port=port,
        agent=agent,
        spans=spans,
        model=model,
    )


def _db(db: Path | None) -> Path:
    """The sessions file: ``--db`` > environment > settings files > ``~/.dive/sessions.db``."""
    return resolve_settings(Flags(db=db)).db


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    say(f"warning: {message}")


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ``dive`` command (the console script and ``python -m dive``).

    Args:
        argv: the arguments after ``dive``; None: ``sys.argv[1:]``.
    """
    warnings.showwarning = _one_line_warning
    try:
        app(args=list(argv) if argv is not None else None, prog_name="dive")
    except SystemExit:
        raise
    except BaseException as exc:
        sys.exit(exit_code_of(exc))
