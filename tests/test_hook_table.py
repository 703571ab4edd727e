"""Hooks are wired by the table: one list of points, named alike everywhere.

The points of ``HOOK_POLICIES``, the ``HookPoint`` literal, the fields of ``Hooks``, the
table in ``dive.agent._hooks``'s docstring and in ``docs/hooks.md`` (both generated from the
policies), and the points the loop runs its hooks at (``run.hook("<point>", ...)``) are the
same names, in the same order where there is one.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import get_args

import dive.agent._hooks as hooks_module
from dive.agent import HOOK_POINTS, HOOK_POLICIES, HookPoint, Hooks

ROOT = Path(__file__).resolve().parent.parent
DOCS_TABLE = ("<!-- hook table: generated from HOOK_POLICIES", "<!-- end hook table -->")


def test_the_points_are_the_policy_tables_rows_and_the_hooks_fields() -> None:
    assert tuple(HOOK_POLICIES) == HOOK_POINTS
    assert get_args(HookPoint) == HOOK_POINTS
    assert tuple(f.name for f in dataclasses.fields(Hooks)) == HOOK_POINTS


def test_the_module_docstring_table_is_generated_from_the_policies() -> None:
    assert hooks_module.hook_table() in (hooks_module.__doc__ or "")


def test_the_docs_table_is_generated_from_the_policies() -> None:
    page = (ROOT / "docs" / "hooks.md").read_text()
    start = page.index(DOCS_TABLE[0])
    start = page.index("\n", start) + 1
    end = page.index(DOCS_TABLE[1])
    assert page[start:end].strip() == hooks_module.hook_table("markdown"), (
        "docs/hooks.md's table differs from HOOK_POLICIES: paste hook_table('markdown')"
    )


def _points_the_loop_runs() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src" / "dive" / "agent").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "hook"
                and node.args
            ):
                found |= {
                    c.value
                    for c in ast.walk(node.args[0])
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
    return found


def test_every_point_is_run_by_the_loop_through_run_hook() -> None:
    assert _points_the_loop_runs() == set(HOOK_POINTS)


def test_run_hook_hands_back_only_what_the_point_may_change() -> None:
    from dive import Agent, HookContext
    from dive.agent._hooks import HookOutput
    from dive.agent._run import Run
    from dive.testing import ScriptedModel, text

    outputs: dict[HookPoint, HookOutput] = {}
    original = Run.hook

    async def recording(self: Run, point: HookPoint, **kw: object) -> HookOutput:
        out = await original(self, point, **kw)  # type: ignore[arg-type]
        outputs[point] = out
        return out

    def noop(ctx: HookContext) -> None:
        pass

    every = Hooks(**{p: [noop] for p in HOOK_POINTS})  # type: ignore[arg-type]
    agent = Agent(model=ScriptedModel([text("hi")]), hooks=every)
    Run.hook = recording  # type: ignore[method-assign]
    try:
        agent.run_sync("hello")
    finally:
        Run.hook = original  # type: ignore[method-assign]
    assert outputs, "no hook ran"
    for point, out in outputs.items():
        assert set(out.changed) == HOOK_POLICIES[point].may_change, point
