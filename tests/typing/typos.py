"""Deliberate mistakes: ``tests/test_typing.py`` runs pyright on this file and expects
exactly the errors marked ``# error: <rules>`` (the main type check excludes it).

A ``*`` rule ends a prefix: follow-on errors of a mistake (an unknown type) are allowed.
"""

from __future__ import annotations

from dataclasses import dataclass

from dive import Agent, ToolContext, tool
from dive.testing import ScriptedModel


@dataclass
class Deps:
    user: str


@tool(nmae="lookup")  # error: reportCallIssue, reportUntypedFunctionDecorator
async def lookup(ctx: ToolContext[Deps]) -> str:
    """Look up."""
    return ctx.deps.usr  # error: reportAttributeAccessIssue, reportUnknown*


agent = Agent(model=ScriptedModel(), output_type=int, deps_type=Deps)
agent.run_sync("hi", valuez={"a": 1})  # error: reportCallIssue
agent.run_sync("hi", deps="ada")  # error: reportArgumentType
agent.stream("hi", on_evnt=print)  # error: reportCallIssue
text: str = agent.run_sync("hi").output  # error: reportAssignmentType
