"""Tables in the docs that restate data held in code say what the code says.

The hook table of docs/hooks.md is read back and compared with ``HOOK_POLICIES`` (its points,
what each may change, what an exception and ``HookAbort`` do) and the ``Hooks`` fields; the
reasons table of docs/turns.md with ``IncompleteReason`` and the default next steps.
"""

from __future__ import annotations

import re
import typing
from dataclasses import fields
from pathlib import Path

from dive.agent import HOOK_POLICIES, Hooks
from dive.turns import IncompleteReason, advise

DOCS = Path(__file__).resolve().parent.parent / "docs"
ON_ERROR = {
    "raise": "raised from `run()`",
    "end_turn": "ends the turn",
    "deny": "denies the call",
    "log": "logged",
}


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


def test_the_hook_table_is_the_policy_table() -> None:
    rows = _rows("hooks.md", "## The hook table")
    points = [re.sub(r"`", "", r[0]) for r in rows]
    assert points == list(HOOK_POLICIES)
    assert points == [f.name for f in fields(Hooks)]
    for point, _when, may_change, on_error, on_abort in rows:
        policy = HOOK_POLICIES[point.strip("`")]
        written: set[str] = set()
        if not may_change.startswith(("returns", "nothing")):
            written = set(re.findall(r"`([a-z_]+)`", may_change))
        assert written == set(policy.may_change), point
        assert on_error.startswith(ON_ERROR[policy.on_error]), point
        assert on_abort.startswith(ON_ERROR[policy.on_abort]), point


def test_the_reasons_table_lists_every_reason_with_its_default_next_step() -> None:
    rows = _rows("turns.md", "### Every reason and its next step")
    reasons = [r[0].strip("`") for r in rows]
    assert reasons == list(typing.get_args(IncompleteReason))
    for reason, _what, next_step in rows:
        name = typing.cast("IncompleteReason", reason.strip("`"))
        assert next_step.strip("`") == advise(name, ()), reason
