"""The computer-use toolset as a declarer.

``ComputerUse(executor, display_width_px=..., display_height_px=...)`` is a declarer tool: while
it is present, its provider definition (``computer_20250124``, named ``computer``) is sent and
the executor tool it declares is left out of the request; the model's ``computer`` calls are
dispatched to the executor, and they halt the batch (a failed action stops later ones).
"""

from __future__ import annotations

import json
from typing import Any

from dive.errors import ToolDefinitionError
from dive.messages import ToolDefinition
from dive.tools import Tool, ToolContext, ToolOutput

__all__ = ["ComputerUse"]


class ComputerUse(Tool):
    """Anthropic computer use: sends the provider tool, dispatches calls to ``executor``.

    Args:
        executor: the tool that performs the actions; it must be named ``computer``.
        display_width_px: the screen's width in pixels.
        display_height_px: the screen's height in pixels.
        display_number: the X11 display number, if any.
        version: the provider tool's version (``computer_20250124``).
    """

    def __init__(
        self,
        executor: Tool,
        *,
        display_width_px: int,
        display_height_px: int,
        display_number: int | None = None,
        version: str = "computer_20250124",
    ) -> None:
        if executor.name != "computer":
            raise ToolDefinitionError(
                f"the computer-use executor must be named 'computer', not {executor.name!r}"
            )
        params: dict[str, Any] = {
            "display_width_px": display_width_px,
            "display_height_px": display_height_px,
        }
        if display_number is not None:
            params["display_number"] = display_number
        self.executor = executor
        self.declared_tools = ("computer",)
        self.definition = ToolDefinition(
            name="computer_use_toolset",
            origin="provider",
            metadata={
                "anthropic.type": version,
                "anthropic.name": "computer",
                "anthropic.params": json.dumps(params),
            },
        )

    async def call(self, input: Any, ctx: ToolContext) -> ToolOutput:
        return await self.executor.call(input, ctx)
