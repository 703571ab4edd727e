"""Tool resolution before every model call.

Static tools plus every toolset's tools; members declared by a present declarer are left out
of the request (the declarer's own definition is sent) but still dispatch by name. A duplicate
name or a toolset error ends the turn ``error``.

Every origin governs the same way: the runtime reads only ``tool.definition``. Function and
typed tools fold their annotations into it when they are built; for any other tool (a plain
``Tool`` subclass, a toolset's or a declarer's member) indexing does the same, filling the
definition's unset fields from set hints (``effect_type``, ``idempotent``, ``sequential_only``,
``halts_batch``) so no origin drops a hint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from dive.agent._run import Run
from dive.agent._setup import ToolIndex
from dive.errors import ToolDefinitionError, ToolResolutionError
from dive.tools import Tool, ToolContext

__all__ = ["index_tools", "resolve_tools"]


def _fill_from_annotations(t: Tool) -> None:
    """Fill ``t.definition``'s unset governance fields from ``t.annotations`` (set hints)."""
    d, hints = t.definition, t.annotations
    changes: dict[str, Any] = {}
    effect = hints.effect_type()
    if d.effect_type is None and effect is not None:
        changes["effect_type"] = effect
    if hints.idempotent and not d.idempotent:
        changes["idempotent"] = True
    if hints.sequential_only and not d.sequential_only:
        changes["sequential_only"] = True
    if hints.halts_batch and not d.halts_batch:
        changes["halts_batch"] = True
    if changes:
        t.definition = replace(d, **changes)


def index_tools(tools: Iterable[Tool]) -> ToolIndex:
    """Index tools by name; the definitions to send leave declared members out."""
    by_name: dict[str, Tool] = {}
    for t in tools:
        if t.name in by_name:
            raise ToolDefinitionError(
                f"two tools are named {t.name!r}; tool names must be unique per agent"
            )
        _fill_from_annotations(t)
        by_name[t.name] = t
    declared = {m for t in by_name.values() for m in t.declared_tools}
    defs = tuple(t.definition for name, t in by_name.items() if name not in declared)
    return ToolIndex(
        by_name=by_name,
        definitions=defs,
        declared=frozenset(m for m in declared if m in by_name),
    )


async def resolve_tools(run: Run) -> ToolIndex:
    """Resolve the tools of the next model call (and make them the run's)."""
    config = run.config
    if not config.toolsets:
        return config.static
    setup = run.setup
    collected: list[Tool] = list(config.static.by_name.values())
    ctx = ToolContext(
        tool_call_id="",
        tool_name="",
        turn_id=run.state.turn_id,
        values=setup.values,
        deps=setup.deps,
        session_id=run.session_id,
        agent_name=config.name,
        cancel=setup.cancel,
    )
    for ts in config.toolsets:
        try:
            found: Sequence[Tool] = await run.runner.list_tools(ts, ctx)
        except Exception as exc:
            raise ToolResolutionError(f"tool resolution error: toolset {ts.name}: {exc}") from exc
        collected.extend(found)
    try:
        index = index_tools(collected)
    except ToolDefinitionError as exc:
        raise ToolResolutionError(f"tool resolution error: {exc}") from exc
    run.use_tools(index)
    return index
