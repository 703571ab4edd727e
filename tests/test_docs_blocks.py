"""Every code block of README.md and of the documentation site runs as written.

Each ``python`` block runs on its own, as a script or, when it awaits at the top level, as
``python -m asyncio`` and notebooks run it (the block is one coroutine run by ``asyncio.run``):
a fresh namespace, an empty working folder (with the
repository's ``examples/`` beside it, for the pages that start an example server), a scratch
home (no user-level skills or agents leak in), placeholder API keys (model construction works
offline; the blocks call dive's scripted model or a simulator). What a block says it prints
(``# → ...``) is checked. A block that needs PostgreSQL reads ``DATABASE_URL``, one that needs
Temporal ``TEMPORAL_ADDRESS``: they get the test services' addresses.

Blocks that are only shown are marked: a language that is not Python (console sessions of the
``dive`` command run in ``tests/test_readme.py`` and ``tests/test_cli_docs.py``), or a python
block with the ``no-run`` class, whose title says what it is (the other library's half of a
side-by-side migration snippet).
"""

from __future__ import annotations

import ast
import asyncio
import gc
import importlib
import inspect
import os
import sys
import types
import warnings
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from tests._docblocks import ROOT, SHOWN, Block, all_blocks, shown_output
from tests.conftest import postgres_dsn

# The MCP SDK's stdio client takes ``errlog=sys.stderr`` as a default argument, bound when it
# is first imported: imported here, at collection, it is the process's stderr rather than a
# test's capture that is closed once that test ends.
importlib.import_module("mcp.client.stdio")

BLOCKS = all_blocks()
RUNNABLE = [b for b in BLOCKS if b.runs]
CONSOLE_PAGES = {"README.md", "docs/cli.md"}


def test_the_pages_have_runnable_examples() -> None:
    pages = {b.page for b in RUNNABLE}
    assert len(RUNNABLE) >= 100, len(RUNNABLE)
    assert {"README.md", "docs/getting-started.md", "docs/testing.md"} <= pages


def test_every_block_is_run_or_marked_as_shown() -> None:
    for block in BLOCKS:
        if block.language == "python":
            assert block.classes <= {"no-run"}, block.where
            if "no-run" in block.classes:
                assert block.title, f"{block.where}: a no-run block says what it is in its title"
        else:
            assert block.language in SHOWN, f"{block.where}: unmarked block {block.language!r}"
        if block.language == "console":
            assert block.page in CONSOLE_PAGES, f"{block.where}: console blocks run only there"


def test_no_run_blocks_are_few_and_only_the_other_library() -> None:
    shown = [b for b in BLOCKS if "no-run" in b.classes]
    assert len(shown) <= len(RUNNABLE) // 5
    for block in shown:
        assert block.page.startswith("docs/migrating"), block.where


def _temporal_address() -> str:
    address = os.environ.get("DIVE_TEST_TEMPORAL_ADDRESS")
    if address:
        return address
    if os.environ.get("CI"):
        pytest.fail("DIVE_TEST_TEMPORAL_ADDRESS is not set: `make test` starts Temporal in CI")
    pytest.skip("the Temporal dev server is not running: use `make test`, which starts it")


def run_block(block: Block, script: Path) -> None:
    """Run the block as ``__main__`` from ``script``; top-level awaits in one event loop.

    As ``runpy`` does, the block's module stands in for ``__main__`` while it runs, so
    dataclasses and pydantic models find their module. Afterwards what the block left is
    collected as at the end of a script: SDK clients a short example does not close (an
    ``AsyncAnthropic`` behind ``dive.model(...)``) go without a ``ResourceWarning`` pinned on
    a later test.
    """
    script.write_text(block.code)
    code = compile(block.code, str(script), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    module = types.ModuleType("__main__")
    module.__file__ = str(script)
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        outcome = eval(code, module.__dict__)
        if inspect.iscoroutine(outcome):
            asyncio.run(cast("Coroutine[Any, Any, None]", outcome))
    finally:
        sys.modules["__main__"] = saved
        module.__dict__.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_block_runs(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path))
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(key, "test-placeholder")
    if "DATABASE_URL" in block.code:
        monkeypatch.setenv("DATABASE_URL", postgres_dsn())
    if "TEMPORAL_ADDRESS" in block.code:
        monkeypatch.setenv("TEMPORAL_ADDRESS", _temporal_address())
    run_block(block, work / f"{Path(block.page).stem}_line_{block.line}.py")
    printed = capfd.readouterr().out
    for expected in shown_output(block.code):
        assert expected in printed, (block.where, expected, printed)
