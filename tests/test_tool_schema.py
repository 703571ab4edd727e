"""Function and typed tools: golden input schemas, docstrings, governance, bad definitions."""

from __future__ import annotations

import enum
import socket
import subprocess
import sys
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from dive.agent import Agent
from dive.errors import ToolDefinitionError
from dive.messages import ToolRetryPolicy
from dive.testing import ScriptedModel
from dive.tools import FunctionTool, Tool, ToolAnnotations, ToolContext, TypedTool, tool


def schema(t: Tool) -> dict[str, Any]:
    return dict(t.definition.input_schema)


# --- types used by the tools under test (module level so hints resolve) ----------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


class Shape(BaseModel):
    """A shape."""

    name: str
    points: list[Point]


class Custom:
    """A plain class pydantic cannot describe."""


class SearchInput(BaseModel):
    """Search the index."""

    query: str = Field(description="What to search for.")
    limit: int = 10


# --- primitives ----------------------------------------------------------------------------


def test_primitive_params_with_defaults() -> None:
    @tool
    def prim(a: int, b: str = "x", c: float = 1.5, d: bool = False) -> str:
        """Do prim."""
        return ""

    assert isinstance(prim, FunctionTool)
    assert prim.name == "prim"
    assert prim.definition.description == "Do prim."
    assert schema(prim) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "a": {"type": "integer"},
            "b": {"default": "x", "type": "string"},
            "c": {"default": 1.5, "type": "number"},
            "d": {"default": False, "type": "boolean"},
        },
        "required": ["a"],
    }


def test_no_params_is_an_empty_object() -> None:
    @tool
    def now() -> str:
        return ""

    assert now.definition.description == ""
    assert schema(now) == {"type": "object", "additionalProperties": False, "properties": {}}


def test_from_function_and_decorator_options() -> None:
    def lookup(key: str) -> str:
        """Ignored summary."""
        return key

    t = FunctionTool.from_function(lookup, name="find", description="Explicit.")
    assert t.name == "find"
    assert t.definition.description == "Explicit."
    assert t.fn is lookup

    @tool(name="renamed", description="")
    def other(key: str) -> str:
        """Docstring summary."""
        return key

    assert other.name == "renamed"
    assert other.definition.description == ""
    assert schema(other) == schema(t)


# --- docstrings ------------------------------------------------------------------------------

FORECAST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "city": {"description": "The city name.", "type": "string"},
        "days": {"default": 3, "description": "Number of days.", "type": "integer"},
    },
    "required": ["city"],
}


def test_google_docstring() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Get the forecast.

        Args:
            city: The city name.
            days (int): Number of
                days.

        Returns:
            The forecast.
        """
        return ""

    assert forecast.definition.description == "Get the forecast."
    assert schema(forecast) == FORECAST_SCHEMA


def test_google_docstring_keeps_the_extended_summary() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Get the forecast.

        Uses the national weather service.

        Arguments:
            city: The city name.
            days: Number of days.
        """
        return ""

    assert forecast.definition.description == (
        "Get the forecast.\n\nUses the national weather service."
    )
    assert schema(forecast) == FORECAST_SCHEMA


def test_numpy_docstring() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Get the forecast.

        Parameters
        ----------
        city : str
            The city name.
        days : int
            Number of days.

        Returns
        -------
        str
            The forecast.
        """
        return ""

    assert forecast.definition.description == "Get the forecast."
    assert schema(forecast) == FORECAST_SCHEMA


def test_sphinx_docstring() -> None:
    @tool
    def forecast(city: str, days: int = 3) -> str:
        """Get the forecast.

        :param city: The city name.
        :param int days: Number of days.
        :returns: The forecast.
        """
        return ""

    assert forecast.definition.description == "Get the forecast."
    assert schema(forecast) == FORECAST_SCHEMA


def test_docstring_params_not_in_signature_are_ignored() -> None:
    @tool
    def f(a: int) -> str:
        """Summary.

        Args:
            a: The a.
            ghost: Not a parameter.
        """
        return ""

    assert schema(f)["properties"] == {"a": {"description": "The a.", "type": "integer"}}


def test_docstring_summary_keeps_lines_that_start_with_a_role() -> None:
    @tool
    def f(a: int) -> str:
        """Look a value up in the
        :class:`Index` of the workspace.

        Args:
            a: The a.
        """
        return ""

    assert f.definition.description == "Look a value up in the\n:class:`Index` of the workspace."


def test_google_docstring_may_describe_several_params_at_once() -> None:
    @tool
    def f(x: int, y: int, z: int = 0) -> str:
        """Summary.

        Args:
            x, y: A coordinate.
            z: The height.
        """
        return ""

    assert schema(f)["properties"] == {
        "x": {"description": "A coordinate.", "type": "integer"},
        "y": {"description": "A coordinate.", "type": "integer"},
        "z": {"default": 0, "description": "The height.", "type": "integer"},
    }


def test_plain_docstrings_need_no_parser() -> None:
    """A docstring without sections is the description as it is; griffe is not imported."""
    code = (
        "import sys\n"
        "from dive.tools import tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        '    """Add two integers.\n\n    Both may be negative."""\n'
        "    return a + b\n"
        "print(repr(add.definition.description), 'griffe' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == r"'Add two integers.\n\nBoth may be negative.' False"


# --- annotated constraints -----------------------------------------------------------------


def test_annotated_field_constraints() -> None:
    @tool
    def count(n: Annotated[int, Field(ge=0)], s: Annotated[str, Field(max_length=5)] = "a") -> str:
        return ""

    assert schema(count) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "n": {"minimum": 0, "type": "integer"},
            "s": {"default": "a", "maxLength": 5, "type": "string"},
        },
        "required": ["n"],
    }
    assert count.validate({"n": 1})[1] is None
    _, err = count.validate({"n": -1})
    assert err is not None
    assert err.startswith('Invalid arguments for tool "count": n: ')


def test_annotated_field_description() -> None:
    @tool
    def count(n: Annotated[int, Field(description="A count.", ge=0)]) -> str:
        return ""

    assert schema(count)["properties"] == {
        "n": {"description": "A count.", "minimum": 0, "type": "integer"}
    }


def test_docstring_description_with_annotated_constraint() -> None:
    @tool
    def count(n: Annotated[int, Field(ge=0)]) -> str:
        """Count.

        Args:
            n: How many.
        """
        return ""

    assert schema(count)["properties"] == {
        "n": {"description": "How many.", "minimum": 0, "type": "integer"}
    }


# --- literals, enums, optionals, unions -------------------------------------------------------


def test_literal_and_enum_params() -> None:
    @tool
    def paint(mode: Literal["fast", "slow"], color: Color = Color.RED) -> str:
        return ""

    assert schema(paint) == {
        "type": "object",
        "additionalProperties": False,
        "$defs": {"Color": {"enum": ["red", "blue"], "title": "Color", "type": "string"}},
        "properties": {
            "mode": {"enum": ["fast", "slow"], "type": "string"},
            "color": {"$ref": "#/$defs/Color", "default": "red"},
        },
        "required": ["mode"],
    }


def test_optional_is_nullable_any_of() -> None:
    @tool
    def page(limit: Optional[int] = None, cursor: str | None = None) -> str:  # noqa: UP045
        return ""

    assert schema(page) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
    }


def test_union_param() -> None:
    @tool
    def get(key: int | str) -> str:
        return ""

    assert schema(get) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"key": {"anyOf": [{"type": "integer"}, {"type": "string"}]}},
        "required": ["key"],
    }


# --- nested models and collections ------------------------------------------------------------


def test_nested_models_produce_defs_and_refs() -> None:
    @tool
    def draw(shape: Shape, origin: Point | None = None) -> str:
        return ""

    assert schema(draw) == {
        "type": "object",
        "additionalProperties": False,
        "$defs": {
            "Point": {
                "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
                "required": ["x"],
                "title": "Point",
                "type": "object",
            },
            "Shape": {
                "description": "A shape.",
                "properties": {
                    "name": {"type": "string"},
                    "points": {"items": {"$ref": "#/$defs/Point"}, "type": "array"},
                },
                "required": ["name", "points"],
                "title": "Shape",
                "type": "object",
            },
        },
        "properties": {
            "shape": {"$ref": "#/$defs/Shape"},
            "origin": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
        },
        "required": ["shape"],
    }


def test_nested_model_input_is_validated_into_the_model() -> None:
    @tool
    def draw(shape: Shape) -> str:
        return ""

    value, err = draw.validate({"shape": {"name": "tri", "points": [{"x": 1}]}})
    assert err is None
    assert value.shape == Shape(name="tri", points=[Point(x=1)])
    _, err = draw.validate({"shape": {"name": "tri", "points": [{"y": 1}]}})
    assert err is not None
    assert "shape.points.0.x" in err


def test_list_and_dict_params() -> None:
    @tool
    def tag(
        tags: list[str], weights: dict[str, float], matrix: list[list[int]] | None = None
    ) -> str:
        return ""

    assert schema(tag) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "tags": {"items": {"type": "string"}, "type": "array"},
            "weights": {"additionalProperties": {"type": "number"}, "type": "object"},
            "matrix": {
                "anyOf": [
                    {"items": {"items": {"type": "integer"}, "type": "array"}, "type": "array"},
                    {"type": "null"},
                ],
                "default": None,
            },
        },
        "required": ["tags", "weights"],
    }


# --- the context parameter --------------------------------------------------------------------


def test_ctx_param_is_excluded_from_the_schema() -> None:
    @tool
    async def search(q: str, ctx: ToolContext, limit: int = 5) -> str:
        """Search."""
        return ""

    assert schema(search) == {
        "type": "object",
        "additionalProperties": False,
        "properties": {"q": {"type": "string"}, "limit": {"default": 5, "type": "integer"}},
        "required": ["q"],
    }
    assert search.definition.description == "Search."


def test_unannotated_ctx_param_is_excluded_too() -> None:
    def search(q: str, ctx) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return ""

    t = FunctionTool(search)  # pyright: ignore[reportUnknownArgumentType]
    assert list(schema(t)["properties"]) == ["q"]


# --- typed tools ---------------------------------------------------------------------------------


class Search(TypedTool[SearchInput]):
    input_model = SearchInput
    tool_name = "search"

    async def run(self, input: SearchInput, ctx: ToolContext) -> str:
        return input.query


class Described(TypedTool[SearchInput]):
    input_model = SearchInput
    tool_description = "Custom description."
    tool_annotations = ToolAnnotations(read_only=True)
    governance = {"tags": frozenset({"search"}), "timeout": 2.0}  # noqa: RUF012

    async def run(self, input: SearchInput, ctx: ToolContext) -> str:
        return input.query


def test_typed_tool_definition() -> None:
    t = Search()
    assert isinstance(t, Tool)
    assert t.name == "search"
    assert t.definition.description == "Search the index."
    assert schema(t) == {
        "type": "object",
        "description": "Search the index.",
        "properties": {
            "query": {"description": "What to search for.", "type": "string"},
            "limit": {"default": 10, "type": "integer"},
        },
        "required": ["query"],
    }


def test_typed_tool_options() -> None:
    t = Described()
    assert t.name == "Described"
    assert t.definition.description == "Custom description."
    assert t.definition.effect_type == "read_only"
    assert t.definition.tags == frozenset({"search"})
    assert t.definition.timeout == 2.0


def test_typed_tool_validates_into_the_model() -> None:
    t = Search()
    value, err = t.validate({"query": "q"})
    assert err is None
    assert value == SearchInput(query="q", limit=10)
    _, err = t.validate({})
    assert err == 'Invalid arguments for tool "search": query: Field required'


def test_typed_tool_without_input_model_raises() -> None:
    class Broken(TypedTool[SearchInput]):
        async def run(self, input: SearchInput, ctx: ToolContext) -> str:
            return ""

    with pytest.raises(ToolDefinitionError, match="input_model"):
        Broken()


# --- bad definitions ----------------------------------------------------------------------------


def test_unsupported_custom_class_param_names_the_parameter() -> None:
    def f(a: int, thing: Custom) -> str:
        return ""

    with pytest.raises(ToolDefinitionError) as info:
        FunctionTool(f)
    message = str(info.value)
    assert "'thing'" in message
    assert "'f'" in message
    assert "Custom" in message


def test_unsupported_socket_param_names_the_parameter() -> None:
    def connect(sock: socket.socket) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="parameter 'sock'"):
        tool(connect)


@pytest.mark.parametrize("which", ["args", "kwargs"])
def test_var_args_are_rejected_naming_them(which: str) -> None:
    def with_args(a: int, *args: int) -> str:
        return ""

    def with_kwargs(a: int, **kwargs: int) -> str:
        return ""

    fn = with_args if which == "args" else with_kwargs
    with pytest.raises(ToolDefinitionError, match=f"parameter '{which}'"):
        FunctionTool(fn)


def test_positional_only_param_is_rejected() -> None:
    def f(a: int, /) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="'a'"):
        FunctionTool(f)


def test_unresolvable_hint_raises_at_construction() -> None:
    def f(a: DoesNotExist) -> str:  # noqa: F821  # pyright: ignore[reportUndefinedVariable, reportUnknownParameterType]
        return ""

    with pytest.raises(ToolDefinitionError, match="'f'"):
        FunctionTool(f)  # pyright: ignore[reportUnknownArgumentType]


@pytest.mark.parametrize("name", ["bad name", "dots.not.allowed", "x" * 65, "naïve"])
def test_invalid_tool_name(name: str) -> None:
    def f(a: int) -> str:
        return ""

    with pytest.raises(ToolDefinitionError, match="invalid"):
        FunctionTool(f, name=name)


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ToolDefinitionError, match="'<lambda>' is invalid"):
        FunctionTool(lambda: "")
    assert FunctionTool(lambda: "", name="anon").name == "anon"


def test_valid_tool_name_limits() -> None:
    def f(a: int) -> str:
        return ""

    assert FunctionTool(f, name="x" * 64).name == "x" * 64
    assert FunctionTool(f, name="a-B_9").name == "a-B_9"


def test_unknown_governance_option_raises() -> None:
    def f(a: int) -> str:
        return ""

    with pytest.raises(TypeError, match="bogus"):
        FunctionTool(f, bogus=True)  # pyright: ignore[reportCallIssue]


def test_duplicate_tool_names_in_agent_raise() -> None:
    def lookup(key: str) -> str:
        return key

    def other(key: str) -> str:
        return key

    model = ScriptedModel()
    with pytest.raises(ToolDefinitionError, match="'lookup'"):
        Agent(model=model, tools=[lookup, FunctionTool(other, name="lookup")])
    with pytest.raises(ToolDefinitionError, match="'lookup'"):
        Agent(model=model, tools=[tool(lookup), tool(lookup)])


def test_plain_functions_become_tools_in_agent() -> None:
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    agent = Agent(model=ScriptedModel(), tools=[lookup])
    (d,) = agent.tool_definitions
    assert d.name == "lookup"
    assert d.description == "Look a key up."


# --- governance from annotations ------------------------------------------------------------


def _f(a: int) -> str:
    return ""


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [
        (ToolAnnotations(), None),
        (ToolAnnotations(read_only=True), "read_only"),
        (ToolAnnotations(read_only=False), None),
        (ToolAnnotations(destructive=True), "write"),
        (ToolAnnotations(open_world=True), "external_side_effect"),
        (ToolAnnotations(open_world=True, destructive=True), "external_side_effect"),
        (ToolAnnotations(open_world=True, read_only=True), "external_side_effect"),
    ],
)
def test_annotations_fill_effect_type(annotations: ToolAnnotations, effect: str | None) -> None:
    t = FunctionTool(_f, annotations=annotations)
    assert t.definition.effect_type == effect
    assert t.definition.read_only is (effect == "read_only")
    assert t.annotations is annotations


def test_explicit_effect_type_wins_over_annotations() -> None:
    t = FunctionTool(_f, annotations=ToolAnnotations(read_only=True), effect_type="write")
    assert t.definition.effect_type == "write"


def test_idempotent_hint_fills_idempotent() -> None:
    assert not FunctionTool(_f).definition.idempotent
    assert not FunctionTool(_f, annotations=ToolAnnotations(idempotent=False)).definition.idempotent
    t = FunctionTool(_f, annotations=ToolAnnotations(idempotent=True))
    assert t.definition.idempotent
    assert FunctionTool(_f, idempotent=True).definition.idempotent


def test_sequential_and_halting_annotations_fill_the_definition() -> None:
    t = FunctionTool(_f, annotations=ToolAnnotations(sequential_only=True, halts_batch=True))
    assert t.definition.sequential_only
    assert t.definition.halts_batch
    plain = FunctionTool(_f)
    assert not plain.definition.sequential_only
    assert not plain.definition.halts_batch


def test_governance_keywords_pass_through() -> None:
    t = FunctionTool(
        _f,
        timeout=1.5,
        requires_approval=True,
        required_permissions=["net", "fs"],
        risk_level="high",
        tags={"a"},
        terminal=True,
    )
    d = t.definition
    assert d.timeout == 1.5
    assert d.requires_approval
    assert d.required_permissions == frozenset({"net", "fs"})
    assert d.risk_level == "high"
    assert d.tags == frozenset({"a"})
    assert d.terminal
    assert d.origin == "local"


def test_invalid_timeout_raises() -> None:
    with pytest.raises(ToolDefinitionError, match="timeout"):
        FunctionTool(_f, timeout=0)


def test_retry_policy_requires_idempotent_or_read_only() -> None:
    policy = ToolRetryPolicy(max_attempts=3)
    with pytest.raises(
        ToolDefinitionError,
        match=r"retry_policy requires idempotent=True or effect_type='read_only'",
    ):
        FunctionTool(_f, retry_policy=policy)
    with pytest.raises(ToolDefinitionError, match="retry_policy"):
        FunctionTool(_f, retry_policy=policy, annotations=ToolAnnotations(destructive=True))
    assert FunctionTool(_f, retry_policy=policy, idempotent=True).definition.retry_policy == policy
    by_hint = FunctionTool(_f, retry_policy=policy, annotations=ToolAnnotations(idempotent=True))
    assert by_hint.definition.retry_policy == policy
    read_only = FunctionTool(_f, retry_policy=policy, annotations=ToolAnnotations(read_only=True))
    assert read_only.definition.retry_policy == policy
    single = FunctionTool(_f, retry_policy=ToolRetryPolicy(max_attempts=1))
    assert single.definition.retry_policy is not None


def test_tool_decorator_is_exported_at_top_level() -> None:
    import dive

    assert dive.tool is tool
    assert dive.FunctionTool is FunctionTool
