"""The terminal submit tool of ``output_mode="tool"``.

Its input schema is the output's; its arguments are validated by the output's adapter before
it runs, so a schema mismatch goes back to the model as an ``is_error`` result. Running it
only acknowledges the submission: the loop then runs the output validators and accepts the
value, or asks again (up to ``output_retries``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from dive.tools import (
    Tool,
    ToolAnnotations,
    ToolContext,
    ToolOutput,
    build_definition,
    format_validation_error,
)

__all__ = ["OutputTool"]


class OutputTool(Tool):
    """A ``submit_result`` tool: ``validate`` turns arguments into the typed output."""

    def __init__(self, name: str, schema: Mapping[str, Any], convert: Callable[[Any], Any]) -> None:
        self._convert = convert
        self.annotations = ToolAnnotations(read_only=True)
        self.definition = build_definition(
            name,
            "Submit the final result. Call this exactly once, when the answer is complete.",
            schema,
            self.annotations,
            {"terminal": True},
        )

    def validate(self, arguments: Any) -> tuple[Any, str | None]:
        try:
            return self._convert(arguments), None
        except ValidationError as exc:
            return None, format_validation_error(self.name, exc)
        except Exception:  # the {"result": ...} wrapper is missing
            return None, (f'Invalid arguments for tool "{self.name}": put the value under "result"')

    async def call(self, input: Any, ctx: ToolContext[Any]) -> ToolOutput:
        return "Result received."
