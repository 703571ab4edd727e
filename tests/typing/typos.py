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

# dive.prompts: templates and bind_literal values must be string literals (LiteralString).
from dive.prompts import Prompt  # noqa: E402


def greet(user_name: str) -> str:
    Prompt("Hello {{name}}").bind_literal("name", "Ada")
    Prompt("Hello " + user_name)  # error: reportArgumentType
    prompt = Prompt(user_name)  # error: reportArgumentType
    prompt = Prompt("Hello {{name}}").bind_literal("name", user_name)  # error: reportArgumentType
    return prompt.bind_xml("x", {}, "root").build()  # error: reportCallIssue, reportUnknown*
