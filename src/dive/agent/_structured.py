"""Structured output: ``output_type=Model`` adds a terminal ``submit_result`` tool.

Validation errors go back to the model as ``is_error`` results, up to ``output_retries``; a
plain text answer counts as a failure and is answered with a reminder. Exhausting the retries
ends the turn incomplete ``error`` with an ``OutputValidationError``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from dive.errors import ToolDefinitionError
from dive.tools import (
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    build_definition,
    format_validation_error,
    schema_of,
)

__all__ = ["OutputTool"]


class OutputTool(Tool):
    """The ``submit_result`` tool for an ``output_type``."""

    def __init__(self, output_type: type[Any], name: str = "submit_result") -> None:
        if not (isinstance(output_type, type) and issubclass(output_type, BaseModel)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolDefinitionError(
                f"output_type must be a pydantic BaseModel subclass, not {output_type!r}"
            )
        self.output_type = output_type
        self.annotations = ToolAnnotations(read_only=True)
        self.definition = build_definition(
            name,
            "Submit the final result. Call this exactly once, when the answer is complete.",
            schema_of(output_type),
            self.annotations,
            {"terminal": True},
        )

    def validate(self, arguments: Any) -> tuple[Any, str | None]:
        from pydantic import ValidationError

        try:
            return self.output_type.model_validate(arguments), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return "Result accepted."
