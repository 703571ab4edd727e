"""The ``<system-reminder>`` rule dive appends to the system prompt: documented, and switchable.

The agents page, where instructions are documented, quotes the rule word for word and names
the switch (``prime_reminders=False``); the switch is checked on a run with instructions,
without them, and through an extension's rules.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from dive import Agent
from dive.agent._agent import REMINDER_RULE
from dive.testing import ScriptedModel, text

PAGE = Path(__file__).resolve().parent.parent / "docs" / "agents.md"


def _flat(markdown: str) -> str:
    unquoted = re.sub(r"^> ?", "", markdown, flags=re.MULTILINE)
    return html.unescape(re.sub(r"\s+", " ", unquoted))  # the page escapes the tag for HTML


def test_the_agents_page_quotes_the_rule_and_names_the_switch() -> None:
    page = _flat(PAGE.read_text())
    assert REMINDER_RULE in page
    assert "prime_reminders=False" in page


async def test_the_rule_follows_the_instructions_by_default() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model=model, instructions="Be terse.").run("hi")
    assert model.requests[0].system == f"Be terse.\n\n{REMINDER_RULE}"


async def test_without_instructions_the_rule_is_the_whole_prompt_unless_turned_off() -> None:
    model = ScriptedModel([text("ok"), text("ok")])
    await Agent(model=model).run("hi")
    await Agent(model=model, prime_reminders=False).run("hi")
    assert [r.system for r in model.requests] == [REMINDER_RULE, ""]


async def test_turned_off_the_prompt_is_exactly_the_instructions() -> None:
    model = ScriptedModel([text("ok")])
    await Agent(model=model, instructions="Be terse.", prime_reminders=False).run("hi")
    assert model.requests[0].system == "Be terse."
