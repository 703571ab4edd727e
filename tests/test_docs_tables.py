"""Tables in the docs that restate data held in code say what the code says.

The "when each point runs" table of docs/hooks.md lists every hook point in order (the policy
table above it is generated from ``HOOK_POLICIES`` and checked in ``tests/test_hook_table.py``);
the reasons table of docs/turns.md lists every ``IncompleteReason`` with its default next step;
docs/errors.md names every exception the public packages export; the governance table of
docs/agents.md has a row for every governance field.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import dive.errors
import dive.executor
import dive.mcp
import dive.permissions
import dive.testing
import dive.toolkit
from dive.agent import HOOK_POINTS
from dive.tools import Governance
from dive.turns import IncompleteReason
from dive.turns._close import DEFAULT_NEXT

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _rows(page: str, heading: str) -> list[list[str]]:
    text = (DOCS / page).read_text()
    section = text.split(heading, 1)[1]
    rows: list[list[str]] = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]  # the header row


def test_the_when_table_lists_every_hook_point_in_order() -> None:
    rows = _rows("hooks.md", "When each point runs:")
    assert [r[0].strip("`") for r in rows] == list(HOOK_POINTS)


def test_the_reasons_table_lists_every_reason_with_its_default_next_step() -> None:
    rows = _rows("turns.md", "### Every reason and its next step")
    reasons = [r[0].strip("`") for r in rows]
    assert reasons == list(typing.get_args(IncompleteReason))
    for reason, _what, next_step in rows:
        assert next_step.strip("`") == DEFAULT_NEXT[reason.strip("`")], reason


def test_the_error_reference_names_every_exported_exception() -> None:
    page = (DOCS / "errors.md").read_text()
    for module in (
        dive.errors,
        dive.executor,
        dive.mcp,
        dive.permissions,
        dive.toolkit,
        dive.testing,
    ):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                assert re.search(rf"\b{name}\b", page), f"{module.__name__}.{name}"


def test_the_governance_table_has_every_field() -> None:
    rows = _rows("agents.md", "## Governance: what a tool may do")
    assert sorted(r[0].strip("`") for r in rows) == sorted(Governance.__annotations__)
