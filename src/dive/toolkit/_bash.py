"""``Bash``: one shell command per call, in a fresh ``/bin/bash -c`` under the workspace root.

By default every command runs inside the OS sandbox of ``_sandbox`` (bubblewrap on Linux):
the workspace is the only place it can write (``.dive/`` excepted), it sees neither the
agent's processes nor the network (unless ``network=True``), and nothing it starts outlives
the call. Where the sandbox cannot run (no ``bwrap``, no user namespaces, not Linux) the
tool says so once in the log and refuses every command, unless it was built with
``sandbox="off"``: that is logged when the tool is built and noted on each call's approval
record by the permission engine (definition metadata ``dive.sandbox="off"``).

Flow of a call: the command (``bwrap``, or the shell itself) starts in its own session and
process group
(``start_new_session=True``) with the working directory set to the root, stdin from
``/dev/null``, stdout and stderr merged into one pipe, and a filtered environment. Output is
read as it arrives into a head and a tail buffer (memory stays bounded whatever the command
prints) and streamed to ``ctx.stream_output`` up to the cap. The call ends when:

- the shell exits: its output pipe is drained; processes it left in the background that
  still hold the output after a short linger are stopped (the tree is killed, as below);
- the timeout expires: the tree gets ``SIGTERM``, then ``SIGKILL`` after a grace period, so
  the command's children and grandchildren die with it;
- the call is cancelled (a hard cancel of the run, the tool's own timeout): the group gets
  ``SIGTERM`` at once, the rest of the tree right after, and ``SIGKILL`` follows after the
  grace period, in the background, and the cancellation goes on.

The tree is the shell's process group plus, on Linux, every process of the shell's session:
the shell leads a new session, so a job that ``set -m`` moved into a process group of its
own is still found (by the session id in ``/proc/<pid>/stat``) and killed. The ``/proc``
scan runs in a worker thread, never on the event loop. Where there is no ``/proc`` (macOS,
the BSDs) only the process group is killed, and jobs in groups of their own escape.

With ``sandbox="off"`` the command runs as the current user with the user's file system and
network: nothing stops it from reading or writing outside the root, reading the agent's
environment through ``/proc``, and a process that starts a session of its own (``setsid``)
escapes the kill.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dive.errors import UserError
from dive.toolkit._process import Output, kill_in_background, terminate
from dive.toolkit._sandbox import Sandbox, sandbox_problem
from dive.tools import (
    Tool,
    ToolAnnotations,
    ToolCallPreview,
    ToolContext,
    ToolReturn,
    build_definition,
    format_validation_error,
    schema_of,
)

__all__ = ["DEFAULT_ENV_ALLOW", "SECRET_ENV_PATTERNS", "Bash", "BashInput"]

DEFAULT_ENV_ALLOW: tuple[str, ...] = (
    "PATH",
    "HOME",
    "LANG",
    "LC_*",
    "TERM",
    "TMPDIR",
    "USER",
    "SHELL",
)
"""Environment variables a command sees by default (``*`` is a wildcard)."""

SECRET_ENV_PATTERNS: tuple[str, ...] = (
    "*_TOKEN",
    "*_SECRET",
    "*_KEY",
    "*API_KEY*",
    "*APIKEY*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "*_PAT",
)
"""Names never passed on from the parent environment, whatever the allow-list says."""

_LINGER = 1.0  # seconds the output may stay open after the shell exited
_log = logging.getLogger("dive.toolkit")
_SIGNALS = frozenset(int(s) for s in signal.Signals)


class BashInput(BaseModel):
    """The arguments of a ``Bash`` call."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(
        min_length=1,
        description="The command to run, as one bash script (bash -c). Pipes, &&, redirects "
        "and multi-line scripts work; each call starts a fresh shell at the workspace root.",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="Seconds before the command and every process it started are killed. "
        "Omit for the default; larger values are limited to the maximum.",
    )
    description: str | None = Field(
        default=None,
        description="What the command does, in 5-10 words, for the people watching "
        "(for example 'Run the unit tests').",
    )


def _environment(
    source: Mapping[str, str], allow: Iterable[str], extra: Mapping[str, str]
) -> dict[str, str]:
    """The variables of ``source`` that match ``allow`` and no secret pattern, plus ``extra``."""
    patterns = tuple(allow)
    env: dict[str, str] = {}
    for name, value in source.items():
        upper = name.upper()
        if any(fnmatch.fnmatchcase(upper, p) for p in SECRET_ENV_PATTERNS):
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            env[name] = value
    env.update(extra)
    return env


class Bash(Tool):
    """Runs a shell command in a fresh ``/bin/bash -c`` at the workspace root.

    Annotated destructive and open world (``effect_type="external_side_effect"``): a
    command can change files and reach the network. The permission engine matches rules such
    as ``Bash(git status:*)`` against the ``command`` argument (metadata
    ``dive.permission.argument="command"``, ``dive.permission.kind="command"``).

    What it confines: by default every command runs in the OS sandbox (bubblewrap, see
    :class:`Sandbox`): it can write only the workspace (``.dive/`` and the sandbox's
    ``read_only`` paths excepted) and a private ``/tmp``, sees its own processes only, has
    no network unless ``network=True``, and nothing it starts survives the call. Every call
    starts at ``root`` (a ``cd`` does not carry over), runs in its own session and process
    group, and on timeout or cancellation the whole tree is killed. A call sees only the
    allowed environment variables and returns at most ``output_cap`` characters. What the
    sandbox does not stop: reading files every user may read, and using CPU and memory.
    Where it cannot run, every call is refused with a message saying why and what to do.

    Args:
        root: the working directory of every command (must be an existing directory).
        env_allow: more environment variable names (``*`` wildcards allowed) to pass on, on
            top of :data:`DEFAULT_ENV_ALLOW` (``PATH``, ``HOME``, ``LANG``, ``LC_*``,
            ``TERM``, ``TMPDIR``, ``USER``, ``SHELL``). Names matching
            :data:`SECRET_ENV_PATTERNS` (``*_TOKEN``, ``*_SECRET``, ``*_KEY``, API keys,
            passwords) are never passed on from the parent environment.
        env: variables to set for every command, as given (the one way to hand a command a
            secret on purpose).
        default_timeout: seconds a command may run when the call gives no timeout.
        max_timeout: the largest timeout a call may ask for; larger requests are limited
            to it (the timeout message says so).
        output_cap: characters of merged stdout and stderr returned; past it the first and
            last halves are kept and a note says how many characters were cut.
        kill_grace: seconds between ``SIGTERM`` and ``SIGKILL`` when the tree is killed.
        requires_approval: ask before each command (the approval gate suspends the turn; a
            permission policy's rules, such as ``Bash(git status:*)``, and mode decide);
            ``False`` runs every command unasked.
        network: let commands use the host's network (``True``); by default they have none
            but their own loopback interface.
        sandbox: how commands are confined: a :class:`Sandbox` (None: the default one), or
            ``"off"`` to run them unconfined as the current user (logged as a warning here,
            and noted on each call's approval record by the permission engine).
        name: the tool's name.

    Raises:
        UserError: ``root`` is not a directory, a limit is not positive, the default
            timeout exceeds the maximum, ``env_allow`` names a secret, or ``sandbox`` is
            neither a :class:`Sandbox` nor ``"off"``.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        env_allow: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        default_timeout: float = 120,
        max_timeout: float = 600,
        output_cap: int = 30_000,
        kill_grace: float = 2.0,
        requires_approval: bool = True,
        network: bool = False,
        sandbox: Sandbox | Literal["off"] | None = None,
        name: str = "Bash",
    ) -> None:
        known = sandbox is None or sandbox == "off"
        if not known and not isinstance(sandbox, Sandbox):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f'Bash: sandbox must be a Sandbox(...), None (the default) or "off", not '
                f"{sandbox!r}"
            )
        path = Path(root).expanduser()
        if not path.is_dir():
            raise UserError(f"Bash: root {str(root)!r} is not an existing directory")
        if not (default_timeout > 0 and max_timeout > 0 and output_cap > 0 and kill_grace >= 0):
            raise UserError(
                "Bash: default_timeout, max_timeout and output_cap must be > 0 (kill_grace >= 0)"
            )
        if default_timeout > max_timeout:
            raise UserError(
                f"Bash: default_timeout ({default_timeout:g} s) exceeds max_timeout "
                f"({max_timeout:g} s); raise max_timeout or lower the default"
            )
        names = (env_allow,) if isinstance(env_allow, str) else tuple(env_allow)
        for n in names:
            if any(fnmatch.fnmatchcase(n.upper(), p) for p in SECRET_ENV_PATTERNS):
                raise UserError(
                    f"Bash: env_allow names {n!r}, which looks like a secret; secrets are "
                    "never passed on from the environment. Give the value explicitly with "
                    "env={...} if the commands truly need it"
                )
        self.root = path.resolve()
        self.env_allow = DEFAULT_ENV_ALLOW + names
        self.env = dict(env or {})
        self.default_timeout = float(default_timeout)
        self.max_timeout = float(max_timeout)
        self.output_cap = output_cap
        self.kill_grace = float(kill_grace)
        self.network = bool(network)
        self.sandbox: Sandbox | None = None if sandbox == "off" else (sandbox or Sandbox())
        if self.sandbox is None:
            _log.warning(
                'Bash(%s, sandbox="off"): commands run unconfined, as the current user, with '
                "its files, processes and network",
                self.root,
            )
        self.annotations = ToolAnnotations(
            title="Run a shell command", destructive=True, open_world=True
        )
        self.definition = build_definition(
            name,
            self._description(),
            schema_of(BashInput),
            self.annotations,
            {
                "metadata": {
                    "dive.permission.argument": "command",
                    "dive.permission.kind": "command",
                    "dive.sandbox": "off" if self.sandbox is None else "bwrap",
                },
                "requires_approval": requires_approval,
            },
        )

    def _description(self) -> str:
        return (
            "Run a shell command with /bin/bash -c and return its combined stdout and stderr.\n"
            f"- Every call starts a fresh shell in the workspace root ({self.root}); `cd` and "
            "variables do not carry over to the next call, so chain steps with && or use "
            "paths relative to the root.\n"
            f"- Timeout: {self.default_timeout:g} s by default, at most {self.max_timeout:g} s; "
            "on timeout the command and every process it started are killed.\n"
            f"- Output is capped at {self.output_cap:,} characters (the start and end are "
            "kept); redirect long output to a file and read parts of it.\n"
            "- A non-zero exit status comes back as an error with the exit code.\n"
            "- There is no stdin: use non-interactive flags (-y, --no-pager, --yes).\n"
            "- Background processes (cmd &) that still write to the output when the command "
            "ends are stopped; redirect their output (cmd > log 2>&1 &) to keep them running.\n"
            "- Prefer the dedicated file tools, when available, for reading, searching and "
            "editing files." + self._sandbox_note()
        )

    def _sandbox_note(self) -> str:
        if self.sandbox is None:
            return ""
        network = "the network is reachable" if self.network else "there is no network access"
        return (
            "\n- Commands run in a sandbox: only the workspace and a private /tmp are writable "
            f"(.dive/ is read-only), {network}, other processes are invisible, and nothing "
            "started in the background survives the command."
        )

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        try:
            return BashInput.model_validate(arguments), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)

    def preview(self, arguments: Mapping[str, Any]) -> ToolCallPreview | None:
        command = arguments.get("command")
        if not isinstance(command, str):
            return None
        description = arguments.get("description")
        summary = description if isinstance(description, str) and description else command
        return ToolCallPreview(summary=summary, details=command)

    def environment(self) -> dict[str, str]:
        """The environment a command gets now (filtered from ``os.environ``)."""
        return _environment(os.environ, self.env_allow, self.env)

    async def call(self, input: Any, ctx: ToolContext) -> ToolReturn:
        args: BashInput = input
        requested = args.timeout if args.timeout is not None else self.default_timeout
        limit = min(requested, self.max_timeout)
        argv, env = ["/bin/bash", "-c", args.command], self.environment()
        if self.sandbox is not None:
            problem = await sandbox_problem(self.sandbox)
            if problem is not None:
                return ToolReturn(
                    content=f"<error>This command was not run: {problem}.</error>", is_error=True
                )
            argv = self.sandbox.command(self.root, argv, network=self.network)
            env["TMPDIR"] = "/tmp"
        else:
            _log.info("Bash without a sandbox runs %r", args.command)
        read_fd, write_fd = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.root,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(read_fd)
            return ToolReturn(
                content=f"<error>Could not start {argv[0]} in {self.root}: {exc}</error>",
                is_error=True,
            )
        finally:
            os.close(write_fd)
        output = Output(read_fd, self.output_cap)
        try:
            lingered = await self._wait(proc, output, ctx, limit)
        except TimeoutError:
            await terminate(proc, output, self.kill_grace)
            await self._flush(output, ctx)
            return self._timed_out(output, limit, requested)
        except BaseException:
            kill_in_background(proc, output, self.kill_grace)
            raise
        await self._flush(output, ctx)
        return self._finished(proc.returncode or 0, output, lingered)

    async def _wait(
        self, proc: asyncio.subprocess.Process, output: Output, ctx: ToolContext, limit: float
    ) -> bool:
        """Wait for the shell to exit and the output to close; True if leftovers were killed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        exited = asyncio.ensure_future(proc.wait())
        try:
            async with asyncio.timeout_at(deadline):
                while not exited.done():
                    changed = asyncio.ensure_future(output.changed.wait())
                    try:
                        await asyncio.wait({exited, changed}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        changed.cancel()
                    await self._flush(output, ctx)
        finally:
            if not exited.done():
                exited.cancel()
        try:
            async with asyncio.timeout_at(min(deadline, loop.time() + _LINGER)):
                await output.closed.wait()
        except TimeoutError:
            if loop.time() >= deadline:
                raise
            await terminate(proc, output, self.kill_grace)
            return True
        return False

    @staticmethod
    async def _flush(output: Output, ctx: ToolContext) -> None:
        output.changed.clear()
        if output.pending:
            text = "".join(output.pending)
            output.pending.clear()
            await ctx.stream_output(text)

    def _finished(self, code: int, output: Output, lingered: bool) -> ToolReturn:
        text = output.text(self.output_cap)
        if lingered:
            text += (
                "\n[background processes still holding the output after the command exited "
                "were stopped]"
            )
        if code == 0:
            return ToolReturn(content=text if text.strip() else "(no output)")
        status = f"Exit code {code}"
        if code < 0:
            status = f"Exit code {128 - code} (killed by {signal.Signals(-code).name})"
        elif self.sandbox is not None and code > 128 and code - 128 in _SIGNALS:
            status += f" (killed by {signal.Signals(code - 128).name})"  # bwrap's 128 + signal
        return ToolReturn(content=f"<error>{status}\n{text}</error>", is_error=True)

    def _timed_out(self, output: Output, limit: float, requested: float) -> ToolReturn:
        clamp = (
            f" (the requested {requested:g} s is above the maximum of {self.max_timeout:g} s)"
            if requested > limit
            else ""
        )
        return ToolReturn(
            content=f"<error>Command timed out after {limit:g} s{clamp}; the command and every "
            f"process it started were killed.\n{output.text(self.output_cap)}</error>",
            is_error=True,
        )

    def __repr__(self) -> str:
        off = ', sandbox="off"' if self.sandbox is None else ""
        return f"Bash(root={str(self.root)!r}{off})"
