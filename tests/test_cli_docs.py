"""The ``dive`` examples of ``docs/cli.md`` run as shown, offline, against the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._cli import ROOT, console_blocks, run_console_block

PAGE = ROOT / "docs" / "cli.md"


def test_the_page_has_examples() -> None:
    assert len(console_blocks(PAGE)) >= 3


@pytest.mark.parametrize(("line", "block"), console_blocks(PAGE), ids=lambda v: str(v)[:12])
def test_console_block_runs(line: int, block: str, tmp_path: Path) -> None:
    run_console_block(block, tmp_path, where=f"docs/cli.md:{line}")
