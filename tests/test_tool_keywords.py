"""``@tool`` and ``FunctionTool`` name every keyword (the governance ones through the
``Governance`` TypedDict), so a typo is a type error."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from typing_extensions import Unpack

from dive.messages import CacheControl, ToolDefinition, ToolRetryPolicy
from dive.tools import FunctionTool, Governance, ToolAnnotations, tool

# ToolDefinition fields a tool's keywords do not set: they come from the function itself
NOT_KEYWORDS = {"name", "description", "input_schema"}
OPTIONS = {"name", "description", "annotations", "preview"}


def _keywords(fn: Callable[..., Any]) -> set[str]:
    """The keywords ``fn`` names: its keyword-only ones and those of its ``Unpack[...]``."""
    params = inspect.signature(fn).parameters.values()
    names = {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    for p in params:
        if p.kind is p.VAR_KEYWORD:
            hint = typing.get_type_hints(fn)[p.name]
            assert typing.get_origin(hint) is Unpack, "no untyped **kwargs"
            (typed,) = typing.get_args(hint)
            assert typed is Governance
            names |= set(typed.__optional_keys__)
    return names


def test_every_governance_field_is_a_keyword() -> None:
    governance = {f.name for f in dataclasses.fields(ToolDefinition)} - NOT_KEYWORDS
    assert set(_keywords(FunctionTool.__init__)) == governance | OPTIONS


def test_tool_from_function_and_the_class_take_the_same_keywords() -> None:
    expected = _keywords(FunctionTool.__init__)
    assert _keywords(tool) == expected
    assert _keywords(FunctionTool.from_function) == expected


def test_a_misspelt_keyword_raises_type_error() -> None:
    with pytest.raises(TypeError, match="nmae"):
        tool(nmae="x")  # pyright: ignore[reportCallIssue]


def _f(a: int) -> int:
    """Echo."""
    return a


def test_defaults_build_the_same_definition_as_before() -> None:
    assert tool(_f).definition == ToolDefinition(
        name="_f",
        description="Echo.",
        input_schema=tool(_f).definition.input_schema,
    )


def test_every_keyword_reaches_the_definition() -> None:
    policy = ToolRetryPolicy(max_attempts=2)

    @tool(
        name="echo",
        description="Say it back.",
        timeout=2.0,
        retry_policy=policy,
        requires_approval=True,
        required_permissions=["net"],
        risk_level="low",
        effect_type="write",
        idempotent=True,
        terminal=True,
        sequential_only=True,
        halts_batch=True,
        tags=("a", "b"),
        metadata={"k": "v"},
        origin="mine",
        cache_control=CacheControl(),
    )
    def echo(a: int) -> int:
        return a

    d = echo.definition
    assert (d.name, d.description, d.timeout, d.retry_policy) == (
        "echo",
        "Say it back.",
        2.0,
        policy,
    )
    assert d.requires_approval
    assert d.terminal
    assert d.sequential_only
    assert d.halts_batch
    assert d.required_permissions == frozenset({"net"})
    assert (d.risk_level, d.effect_type, d.idempotent) == ("low", "write", True)
    assert d.tags == frozenset({"a", "b"})
    assert dict(d.metadata) == {"k": "v"}
    assert d.origin == "mine"
    assert d.cache_control == CacheControl()


def test_explicit_idempotent_false_overrides_the_annotation() -> None:
    hinted = ToolAnnotations(idempotent=True)
    assert tool(annotations=hinted)(_f).definition.idempotent
    assert not tool(annotations=hinted, idempotent=False)(_f).definition.idempotent


def test_from_function_passes_every_keyword() -> None:
    t = FunctionTool.from_function(_f, name="g", timeout=1.0, tags=["x"])
    assert (t.name, t.definition.timeout, t.definition.tags) == ("g", 1.0, frozenset({"x"}))
