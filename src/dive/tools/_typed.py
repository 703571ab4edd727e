"""Typed tools: a tool whose input is a validated pydantic model."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from dive.errors import ToolDefinitionError
from dive.tools._context import ToolContext
from dive.tools._function import build_definition, format_validation_error, schema_of
from dive.tools._governance import Governance, governance_fields
from dive.tools._tool import Tool, ToolAnnotations, ToolOutput

__all__ = ["TypedTool"]

InputT = TypeVar("InputT", bound=BaseModel)


class TypedTool(Tool, Generic[InputT]):
    """Subclass with ``input_model``, ``name`` and ``description`` set, and implement ``run``.

    Invalid input becomes an ``is_error`` result and ``run`` is not called; empty input is
    ``{}``.
    """

    input_model: ClassVar[type[BaseModel]]
    tool_name: ClassVar[str] = ""
    tool_description: ClassVar[str] = ""
    tool_annotations: ClassVar[ToolAnnotations] = ToolAnnotations()
    governance: ClassVar[Governance] = {}
    """How the loop governs its calls (:class:`~dive.tools.Governance`)."""

    def __init__(self) -> None:
        model = getattr(type(self), "input_model", None)
        if model is None or not issubclass(model, BaseModel):
            raise ToolDefinitionError(
                f"{type(self).__name__}: set input_model to a pydantic BaseModel subclass"
            )
        name = self.tool_name or type(self).__name__
        self.annotations = self.tool_annotations
        description = self.tool_description or (model.__doc__ or "").strip()
        self.definition = build_definition(
            name,
            description,
            schema_of(model),
            self.annotations,
            governance_fields(self.governance, f"tool {name!r}"),
        )

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Any, str | None]:
        try:
            return self.input_model.model_validate(arguments or {}), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return await self.run(input, ctx)

    @abc.abstractmethod
    async def run(self, input: InputT, ctx: ToolContext) -> ToolOutput:
        """Run on validated input.

        Args:
            input: the validated input model.
            ctx: the call's context (ids, deps, cancellation, output streaming).
        """
