"""What a chat or print-mode run needs, built once from the settings and closed together.

``open_runtime(settings, dialog)`` gives a :class:`Runtime`: the model (or the offline
simulator), the SQLite session store, the built-in toolkit confined to the workspace, MCP
toolsets from ``--mcp-config``, and an :class:`~dive.Agent` whose approval policy is the
permission engine (asks go to ``dialog``; without one the turn suspends with
``approval_required``). Everything it opened is closed when the ``async with`` ends.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from dive.agent import Agent, Limits
from dive.cli._errors import EXIT_USAGE, CliError
from dive.cli._models import build_model
from dive.cli._providers import ModelChoice, choose_model
from dive.cli._settings import CliSettings
from dive.errors import MissingExtraError
from dive.llm import ModelSettings
from dive.permissions import Dialog, PermissionPolicy, permission_policy
from dive.sessions import SQLiteSessionStore
from dive.tools import Tool, Toolset

__all__ = ["Runtime", "default_instructions", "open_runtime", "toolkit"]


def default_instructions(workspace: Path) -> str:
    """dive's system prompt for the command line."""
    return (
        "You are dive, an assistant working in the user's workspace through tools. "
        f"The workspace is {workspace}; paths are relative to it and tools cannot leave it. "
        "Read and search files before changing them, run shell commands with Bash (a fresh "
        "shell at the workspace root each time), and ask the user with AskUser when a "
        "decision is theirs. Be concise and say what you did. "
        f"Today is {date.today().isoformat()}."
    )


def toolkit(workspace: Path) -> list[Tool]:
    """The built-in tools, confined to ``workspace`` (the web tools need the toolkit extra)."""
    from dive.toolkit import AskUser, Bash, TodoWrite, file_tools

    tools: list[Tool] = [*file_tools(workspace), Bash(workspace), AskUser(), TodoWrite()]
    try:
        from dive.toolkit import WebFetch, WebSearch

        tools += [WebFetch(), WebSearch()]
    except (ImportError, MissingExtraError):
        pass
    return tools


async def _mcp_toolsets(path: Path | None, stack: AsyncExitStack) -> list[Toolset]:
    if path is None:
        return []
    if not path.is_file():
        raise CliError(f"--mcp-config {path}: no such file", EXIT_USAGE)
    try:
        from dive.mcp import load_config  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise CliError(
            "--mcp-config needs MCP support: pip install 'dive-agents[mcp]'", EXIT_USAGE
        ) from None
    servers: Mapping[str, Any] = load_config(path)  # pyright: ignore[reportUnknownVariableType]
    toolsets: list[Toolset] = []
    for server in servers.values():
        if hasattr(server, "__aenter__"):
            await stack.enter_async_context(server)
        toolsets.append(server)
    return toolsets


@dataclass(slots=True, kw_only=True)
class Runtime:
    """The pieces of one command's run.

    Attributes:
        settings: the merged settings.
        choice: the model as chosen (offline or not).
        agent: the agent (its model is swapped by ``/model``).
        store: the SQLite session store.
        policy: the permission engine as the approval policy.
        toolsets: MCP servers from ``--mcp-config``.
    """

    settings: CliSettings
    choice: ModelChoice
    agent: Agent[str, None]
    store: SQLiteSessionStore
    policy: PermissionPolicy
    toolsets: Sequence[Toolset] = ()
    _models: ExitStack = field(default_factory=ExitStack)

    def switch_model(self, spec: str, environ: Mapping[str, str] | None = None) -> ModelChoice:
        """Use ``spec`` from the next turn on (the offline notice is returned, not printed)."""
        choice = choose_model(spec, os.environ if environ is None else environ)
        self.agent.model = build_model(
            choice, max_retries=self.settings.max_retries, stack=self._models
        )
        self.choice = choice
        return choice


def _model_settings(settings: CliSettings) -> ModelSettings | None:
    if settings.thinking is None and settings.effort is None:
        return None
    return ModelSettings(
        thinking=settings.thinking,  # pyright: ignore[reportArgumentType]
        reasoning_effort=settings.effort,  # pyright: ignore[reportArgumentType]
    )


@asynccontextmanager
async def open_runtime(
    settings: CliSettings,
    *,
    dialog: Dialog | None = None,
    environ: Mapping[str, str] | None = None,
) -> AsyncIterator[Runtime]:
    """Build the runtime; close the store, MCP servers and any simulator on exit.

    Args:
        settings: the merged settings.
        dialog: answers permission asks (None: asks suspend the turn).
        environ: the environment credentials are read from (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    choice = choose_model(settings.model, env)
    async with AsyncExitStack() as stack:
        models = stack.enter_context(ExitStack())
        model = build_model(choice, max_retries=settings.max_retries, stack=models)
        settings.db.parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteSessionStore(settings.db)
        stack.push_async_callback(store.close)
        toolsets = await _mcp_toolsets(settings.mcp_config, stack)
        policy = permission_policy(settings.permissions, dialog)
        limits = Limits(max_model_calls_per_turn=settings.max_turns) if settings.max_turns else None
        agent: Agent[str, None] = Agent(
            model=model,
            instructions=settings.system_prompt or default_instructions(settings.workspace),
            tools=toolkit(settings.workspace),
            toolsets=toolsets,
            approval_policy=policy,
            model_settings=_model_settings(settings),
            limits=limits,
            name="dive",
        )
        yield Runtime(
            settings=settings,
            choice=choice,
            agent=agent,
            store=store,
            policy=policy,
            toolsets=toolsets,
            _models=models,
        )
