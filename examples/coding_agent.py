"""A coding agent: the toolkit confined to a temporary workspace, fixing a failing test.

The workspace holds a tiny project whose test fails. The agent gets the file tools and
``Bash``, all confined to that folder, under the permission engine in ``accept_edits`` mode:
edits run without asking, the test command is allowed by a rule, ``rm`` is denied, and any
other command would go to the dialog (which, in this unattended example, refuses). With no
provider configured it runs offline with a scripted model and says so; with
ANTHROPIC_API_KEY (or OPENAI_/GEMINI_) set, the same agent runs against the real model.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dive import Agent
from dive.agent import AgentEvent, ToolCallEvent, ToolCallResultEvent
from dive.llm import Model
from dive.permissions import (
    ApprovalRequest,
    DialogAnswer,
    PermissionConfig,
    audit_log,
    permission_policy,
)
from dive.testing import ScriptedModel, call, text, tool_use
from dive.toolkit import Bash, file_tools

TEST_COMMAND = "python3 -m unittest -v"
NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}  # an edit within the same second stays visible

PROJECT = {
    "calc.py": 'def add(a, b):\n    """Add two numbers."""\n    return a - b\n',
    "test_calc.py": (
        "import unittest\n\nfrom calc import add\n\n\n"
        "class AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
    ),
}


def offline_model() -> Model:
    """A scripted model that works the way a real one would: run, read, fix, run again."""
    return ScriptedModel(
        [
            tool_use(call("Bash", {"command": TEST_COMMAND}), text="Let me run the tests."),
            tool_use(call("Read", {"file_path": "calc.py"})),
            tool_use(
                call(
                    "Edit",
                    {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                ),
                text="add subtracts; it should add.",
            ),
            tool_use(call("Bash", {"command": TEST_COMMAND})),
            text("Fixed: `add` returned `a - b`; it now returns `a + b`, and the test passes."),
        ],
        name="scripted-coder",
    )


def pick_model() -> tuple[Model, str]:
    """A real provider when a key or base URL is set, else the offline scripted model."""
    from dive.providers import model as resolve

    for env, default in (
        ("ANTHROPIC", "anthropic:claude-sonnet-4-6"),
        ("OPENAI", "openai:gpt-5"),
        ("GEMINI", "google:gemini-2.5-flash"),
    ):
        base_url = os.environ.get(f"{env}_BASE_URL")
        if os.environ.get(f"{env}_API_KEY") or base_url:
            spec = os.environ.get("DIVE_MODEL", default)
            return resolve(spec, **({"base_url": base_url} if base_url else {})), f"using {spec}"
    return offline_model(), "offline: no provider configured, using a scripted model"


async def refuse(request: ApprovalRequest) -> DialogAnswer:
    """The dialog for calls no rule decided: nobody is watching, so say no."""
    print(f"  asked      {request.prompt} -> refused (unattended example)")
    return DialogAnswer(decision="deny", message="Not allowed here; use the test command.")


async def show(event: AgentEvent) -> None:
    if isinstance(event, ToolCallEvent):
        print(f"  tool call  {event.call.name}({dict(event.call.arguments)})")
    elif isinstance(event, ToolCallResultEvent) and event.result is not None:
        shown = [ln for ln in event.result.text.splitlines() if ln.strip() not in ("", "</error>")]
        lines = shown or [""]
        mark = " [error]" if event.result.is_error else ""
        print(f"  result     {lines[-1][:80]}{mark}")


def tests_pass(root: Path) -> bool:
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=root,
        capture_output=True,
        check=False,
        env={**os.environ, **NO_BYTECODE},
    )
    return proc.returncode == 0


async def main() -> None:
    model, note = pick_model()
    print(f"dive coding agent — {note}")
    with tempfile.TemporaryDirectory(prefix="dive-coding-") as tmp:
        root = Path(tmp)
        for name, body in PROJECT.items():
            (root / name).write_text(body)
        print(f"workspace {root}: tests pass before? {tests_pass(root)}")
        config = PermissionConfig.from_rules(
            mode="accept_edits",
            allow=[f"Bash({TEST_COMMAND}:*)"],
            deny=["Bash(rm:*)"],
            workspace=root,
        )
        agent = Agent(
            model=model,
            tools=[*file_tools(root), Bash(root, default_timeout=60, env=NO_BYTECODE)],
            approval_policy=permission_policy(config, refuse),
            instructions=(
                "You fix failing tests in the project in your workspace. Run the tests with "
                f"`{TEST_COMMAND}`, read the code, make the smallest correct edit with the Edit "
                "tool, and run the tests again. Reply with one sentence on what you changed."
            ),
        )
        result = await agent.run("The test suite fails. Please fix it.", on_event=show)
        print(f"assistant> {result.output}")
        print(f"tests pass after? {tests_pass(root)}")
        print("permission decisions:")
        for entry in audit_log(result.turn):
            print(f"  {entry.call_id}: {entry.decision} by {entry.decided_by} ({entry.rule})")


if __name__ == "__main__":
    asyncio.run(main())
