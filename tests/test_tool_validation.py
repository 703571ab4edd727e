"""Arguments of non-pydantic tools are checked by ``jsonschema`` (the full specification).

The keywords below were ignored by the hand-written subset validator dive had before, so a
call the schema forbids reached the tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import pytest

from dive.messages import ToolDefinition
from dive.tools import Tool, ToolContext, validate_against_schema


class _Echo(Tool):
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.definition = ToolDefinition(name="echo", description="Echo.", input_schema=schema)

    async def call(self, input: Any, ctx: ToolContext) -> Any:
        return input


@pytest.mark.parametrize(
    ("schema", "bad", "good"),
    [
        (
            {"properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}}},
            {"s": "A1"},
            {"s": "ab"},
        ),
        (
            {"properties": {"xs": {"type": "array", "uniqueItems": True}}},
            {"xs": [1, 1]},
            {"xs": [1]},
        ),
        ({"not": {"required": ["x"]}}, {"x": 1}, {"y": 1}),
        ({"minProperties": 1}, {}, {"a": 1}),
        ({"patternProperties": {"^n_": {"type": "integer"}}}, {"n_a": "x"}, {"n_a": 1}),
        (
            {"if": {"required": ["a"]}, "then": {"required": ["b"]}},
            {"a": 1},
            {"a": 1, "b": 2},
        ),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, {"a": 1, "b": 1}),
        (
            {"properties": {"n": {"type": "number", "multipleOf": 5}}},
            {"n": 7},
            {"n": 10},
        ),
        (
            {"prefixItems": [{"type": "string"}], "type": "array"},
            [1, "x"],
            ["x", 1],
        ),
    ],
)
def test_keywords_the_subset_validator_ignored_are_enforced(
    schema: dict[str, Any], bad: Any, good: Any
) -> None:
    assert validate_against_schema(bad, schema) != []
    assert validate_against_schema(good, schema) == []


def test_errors_name_the_argument_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            }
        },
        "required": ["items", "mode"],
    }
    errors = validate_against_schema({"items": [{"name": "a"}, {}, {"name": 3}]}, schema)
    assert "mode: field required" in errors
    assert "items[1].name: field required" in errors
    assert any(e.startswith("items[2].name: 3 is not of type 'string'") for e in errors)


def test_read_only_mappings_and_tuples_are_objects_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "integer"}}},
        "additionalProperties": False,
    }
    frozen = MappingProxyType({"xs": (1, 2)})
    assert validate_against_schema(frozen, MappingProxyType(schema)) == []
    assert validate_against_schema(MappingProxyType({"xs": (1,), "z": 1}), schema) == [
        "input: Additional properties are not allowed ('z' was unexpected)"
    ]


def test_refs_into_defs_and_the_schema_draft() -> None:
    schema = {
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
    }
    assert validate_against_schema({"p": {"x": 1}}, schema) == []
    assert validate_against_schema({"p": {"x": "1"}}, schema) == [
        "p.x: '1' is not of type 'integer'"
    ]
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"N": {"type": "integer"}},
        "properties": {"n": {"$ref": "#/definitions/N"}},
    }
    assert validate_against_schema({"n": "x"}, draft7) == ["n: 'x' is not of type 'integer'"]


def test_an_unusable_schema_is_reported_not_raised() -> None:
    errors = validate_against_schema({"a": 1}, {"properties": {"a": {"$ref": "#/$defs/nope"}}})
    assert len(errors) == 1
    assert "input schema is not usable" in errors[0]
    errors = validate_against_schema({"a": 1}, {"type": "widget"})
    assert "input schema is not usable" in errors[0]


def test_a_tool_answers_invalid_input_naming_itself() -> None:
    echo = _Echo({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    value, err = echo.validate({})
    assert value is None
    assert err == 'Invalid arguments for tool "echo": n: field required'
    assert echo.validate({"n": 2}) == ({"n": 2}, None)


def test_combinators_explain_the_best_match() -> None:
    schema = {"properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    [err] = validate_against_schema({"v": "x"}, schema)
    assert err.startswith("v: does not match any allowed schema (")
