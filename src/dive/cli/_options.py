"""The flags ``dive chat`` and ``dive run`` share, as typer option types."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dive.cli._settings import Flags

__all__ = [
    "Allow",
    "ContinueLast",
    "Db",
    "Deny",
    "Effort",
    "MaxRetries",
    "MaxTurns",
    "McpConfig",
    "ModelName",
    "PermissionModeName",
    "Resume",
    "SessionId",
    "SystemPrompt",
    "Thinking",
    "WorkspaceDir",
    "flags",
]

ModelName = Annotated[
    str | None,
    typer.Option("--model", "-m", help="provider:model, e.g. anthropic:claude-sonnet-4-6."),
]
WorkspaceDir = Annotated[
    Path | None,
    typer.Option("--workspace", "-w", help="The folder the tools work in (default: here)."),
]
PermissionModeName = Annotated[
    str | None,
    typer.Option(
        "--permission-mode",
        help="default, plan, accept_edits, bypass or dont_ask.",
    ),
]
Allow = Annotated[
    list[str] | None,
    typer.Option("--allow", help="An allow rule, e.g. 'Bash(git status:*)' (repeatable)."),
]
Deny = Annotated[
    list[str] | None,
    typer.Option("--deny", help="A deny rule, e.g. 'Read(./.env)' (repeatable)."),
]
McpConfig = Annotated[
    Path | None, typer.Option("--mcp-config", help="MCP servers file (mcpServers JSON).")
]
MaxTurns = Annotated[
    int | None, typer.Option("--max-turns", min=1, help="Model calls allowed per turn.")
]
Thinking = Annotated[str | None, typer.Option("--thinking", help="enabled, adaptive or disabled.")]
Effort = Annotated[
    str | None,
    typer.Option("--effort", help="Reasoning effort: minimal, low, medium, high, xhigh, max."),
]
SystemPrompt = Annotated[
    str | None, typer.Option("--system-prompt", help="Replace dive's instructions.")
]
Db = Annotated[
    Path | None, typer.Option("--db", help="The sessions file (default ~/.dive/sessions.db).")
]
MaxRetries = Annotated[
    int | None, typer.Option("--max-retries", min=0, help="Retries of a failed request.")
]
SessionId = Annotated[
    str | None, typer.Option("--session", "-s", help="Use this session (created if missing).")
]
ContinueLast = Annotated[
    bool, typer.Option("--continue", "-c", help="Continue the most recent session.")
]
Resume = Annotated[str | None, typer.Option("--resume", "-r", help="Resume this session.")]


def flags(
    *,
    model: str | None,
    workspace: Path | None,
    permission_mode: str | None,
    allow: list[str] | None,
    deny: list[str] | None,
    mcp_config: Path | None,
    max_turns: int | None,
    thinking: str | None,
    effort: str | None,
    system_prompt: str | None,
    db: Path | None,
    max_retries: int | None,
) -> Flags:
    """The shared flags as a :class:`Flags`."""
    return Flags(
        model=model,
        workspace=workspace,
        permission_mode=permission_mode,
        allow=tuple(allow or ()),
        deny=tuple(deny or ()),
        mcp_config=mcp_config,
        max_turns=max_turns,
        thinking=thinking,
        effort=effort,
        system_prompt=system_prompt,
        db=db,
        max_retries=max_retries,
    )
