"""A lead agent with a skill, an explore subagent, and compaction of its session.

    python examples/research_team.py

The lead agent loads a ``SKILL.md`` from ``.dive-example/skills`` (its catalog is in the
system prompt), hands a search to the read-only ``explore`` subagent (whose model calls are
charged to the lead's turn), and after a few turns its session is compacted: the session then
loads from a summary while every original turn stays stored. dive's scripted models play the
models, so this runs offline; with real models only the ``model=`` arguments change.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from dive.agent import Agent
from dive.compaction import compact_session
from dive.sessions import MemorySessionStore
from dive.skills import SkillLoader
from dive.subagents import EXPLORE, Subagents
from dive.testing import ScriptedModel, call, text, tool_use
from dive.tools import ToolAnnotations, tool

ROOT = Path(".dive-example")


@tool(annotations=ToolAnnotations(read_only=True))
def search(query: str) -> str:
    """Search the project notes.

    Args:
        query: what to look for.
    """
    return "notes/q3.md: churn fell from 4.1% to 3.2% after the onboarding change"


def write_skill() -> None:
    folder = ROOT / "skills" / "briefing"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        "---\nname: briefing\ndescription: Write a short executive briefing on a topic.\n---\n"
        "Write a three-line briefing on $ARGUMENTS: the finding, the number, the next step.\n"
    )


async def main() -> None:
    write_skill()
    explore_model = ScriptedModel(
        [tool_use(call("search", {"query": "churn"})), text("Churn fell from 4.1% to 3.2%.")]
    )
    lead_model = ScriptedModel(
        [
            tool_use(call("Skill", {"skill": "briefing", "arguments": "churn"})),
            tool_use(
                call(
                    "Agent",
                    {
                        "prompt": "Find our latest churn numbers.",
                        "description": "churn numbers",
                        "subagent_type": "explore",
                    },
                )
            ),
            text("Churn fell from 4.1% to 3.2% after the onboarding change; keep it."),
            text("Q4 will measure retention by cohort."),
            text("Nothing else is open."),
        ]
    )
    store = MemorySessionStore()
    session = store.session("team")
    lead = Agent(
        model=lead_model,
        instructions="You lead a small research team.",
        tools=[search],
        extensions=[
            SkillLoader([ROOT / "skills"]),
            Subagents([replace(EXPLORE, model=explore_model)]),
        ],
        session=session,
    )
    first = await lead.run("Brief me on churn.")
    print("briefing:", first.output_text)
    print("model calls charged to the turn:", first.usage.requests)
    await lead.run("What is planned for Q4?")
    await lead.run("Anything else?")

    summariser = ScriptedModel(["<summary>Churn 4.1% -> 3.2%; Q4 measures cohorts.</summary>"])
    result = await compact_session(session, summariser, keep_recent_tokens=20)
    snapshot = await session.load()
    print(f"compacted {result.compacted} messages into one summary;", end=" ")
    print(f"history now {len(snapshot.history)} messages, {len(await session.turns())} turns kept")


if __name__ == "__main__":
    asyncio.run(main())
