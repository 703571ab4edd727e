"""What a chat or print-mode run needs, built once from the settings and closed together.

``open_runtime(settings, dialog)`` gives a :class:`Runtime`: the model (or the offline
simulator), the SQLite session store, the built-in toolkit confined to the workspace, MCP
toolsets from ``--mcp-config``, and an :class:`~dive.Agent` whose approval policy is the
permission engine (asks go to ``dialog``; without one the turn suspends with
``approval_required``). Everything it opened is closed when the ``async with`` ends.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from dive.agent import Agent, Limits
from dive.cli._errors import EXIT_USAGE, CliError
from dive.cli._models import build_model
from dive.cli._providers import ModelChoice, choose_model
from dive.cli._settings import CliSettings
from dive.errors import MissingExtraError
from dive.llm import Model, ModelSettings
from dive.permissions import Dialog, PermissionPolicy, permission_policy
from dive.sessions import SQLiteSessionStore
from dive.tools import Tool

if TYPE_CHECKING:
    from dive.mcp import MCPServer

__all__ = ["Runtime", "close_model", "default_instructions", "open_runtime", "toolkit"]


def default_instructions(workspace: Path) -> str:
    """The system prompt of dive's command line."""
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


async def _mcp_servers(path: Path | None, stack: AsyncExitStack) -> list[MCPServer]:
    """The servers of ``--mcp-config``, connected now (so a bad one fails before a turn)."""
    if path is None:
        return []
    try:
        from dive.mcp import load_config
    except ImportError:
        raise CliError(
            "--mcp-config needs MCP support: pip install 'dive-agents[mcp]'", EXIT_USAGE
        ) from None
    servers = list(load_config(path).values())
    for server in servers:
        await stack.enter_async_context(server)
    return servers


@dataclass(slots=True, kw_only=True)
class Runtime:
    """The pieces of one command's run.

    Attributes:
        settings: the merged settings.
        choice: the model as chosen (offline or not).
        agent: the agent (its model is swapped by ``/model``).
        store: the SQLite session store.
        policy: the permission engine as the approval policy.
        servers: the MCP servers of ``--mcp-config`` (connected).
    """

    settings: CliSettings
    choice: ModelChoice
    agent: Agent[str, None]
    store: SQLiteSessionStore
    policy: PermissionPolicy
    servers: Sequence[MCPServer] = ()
    _models: ExitStack = field(default_factory=ExitStack)

    async def switch_model(
        self, spec: str, environ: Mapping[str, str] | None = None
    ) -> ModelChoice:
        """Use ``spec`` from the next turn on (the offline notice is returned, not printed).

        The previous model's client is closed; a bad ``spec`` leaves the model unchanged.
        """
        choice = choose_model(spec, os.environ if environ is None else environ)
        model = build_model(choice, max_retries=self.settings.max_retries, stack=self._models)
        old, self.agent.model, self.choice = self.agent.model, model, choice
        await close_model(old)
        return choice


async def close_model(model: Model) -> None:
    """Close a provider model's SDK client (models without ``aclose`` have nothing to close)."""
    aclose = getattr(model, "aclose", None)
    if aclose is not None:
        await aclose()


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
) -> AsyncGenerator[Runtime]:
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
        built: list[Agent[str, None]] = []  # /model swaps the agent's model: close that one
        stack.push_async_callback(lambda: close_model(built[0].model if built else model))
        settings.db.parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteSessionStore(settings.db)
        stack.push_async_callback(store.close)
        servers = await _mcp_servers(settings.mcp_config, stack)
        policy = permission_policy(settings.permissions, dialog)
        limits = Limits(max_model_calls_per_turn=settings.max_turns) if settings.max_turns else None
        agent: Agent[str, None] = Agent(
            model=model,
            instructions=settings.system_prompt or default_instructions(settings.workspace),
            tools=toolkit(settings.workspace),
            toolsets=servers,
            approval_policy=policy,
            model_settings=_model_settings(settings),
            limits=limits,
            name="dive",
        )
        built.append(agent)
        yield Runtime(
            settings=settings,
            choice=choice,
            agent=agent,
            store=store,
            policy=policy,
            servers=servers,
            _models=models,
        )
