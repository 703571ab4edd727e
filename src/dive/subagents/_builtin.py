"""The built-in subagents: ``general-purpose``, and the read-only ``explore`` and ``plan``."""

from __future__ import annotations

from dive.subagents._definition import SubagentDefinition

__all__ = ["BUILTIN_SUBAGENTS", "EXPLORE", "GENERAL_PURPOSE", "PLAN"]

GENERAL_PURPOSE = SubagentDefinition(
    name="general-purpose",
    description=(
        "General-purpose agent for researching complex questions, searching for code and "
        "carrying out multi-step tasks. Use it when a search or task may take several "
        "attempts, so its work stays out of your context."
    ),
    prompt=(
        "You are an agent working on a task delegated to you by another agent. Do what the "
        "task asks, using your tools; do not stop early. When you are done, reply with a "
        "concise, complete report of what you found or did: the other agent sees only your "
        "final reply, so include the file paths, names and results it needs."
    ),
)

EXPLORE = SubagentDefinition(
    name="explore",
    description=(
        "Fast read-only agent for exploring a codebase or a set of documents: finding files, "
        "searching for code or text, and answering questions about them. It cannot change "
        "anything."
    ),
    prompt=(
        "You are a read-only exploration agent. Search and read to answer the question you "
        "were given; you cannot change files or run commands that modify anything. Be quick "
        "and thorough: try several search terms and locations. Reply with the answer and the "
        "exact file paths and line numbers that support it."
    ),
    read_only=True,
)

PLAN = SubagentDefinition(
    name="plan",
    description=(
        "Read-only planning agent: studies the code or material involved and designs a "
        "step-by-step implementation plan, with the files to change and the trade-offs."
    ),
    prompt=(
        "You are a planning agent. Study what the task involves using your read-only tools, "
        "then reply with a concrete, step-by-step implementation plan: the files and "
        "functions to change, the order, the risks and the trade-offs. Do not make changes."
    ),
    read_only=True,
)

BUILTIN_SUBAGENTS: dict[str, SubagentDefinition] = {
    d.name: d for d in (GENERAL_PURPOSE, EXPLORE, PLAN)
}
