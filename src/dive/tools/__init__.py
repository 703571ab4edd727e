"""Tools: function tools, typed tools, toolsets, annotations, outputs and the tool context."""

from dive.tools._context import ResumedCall, ToolContext
from dive.tools._events import ToolProgressEvent, ToolStreamEvent
from dive.tools._function import (
    FunctionTool,
    NoTitlesSchema,
    build_definition,
    format_validation_error,
    schema_of,
    tool,
)
from dive.tools._governance import Governance
from dive.tools._schema import validate_against_schema
from dive.tools._tool import (
    Background,
    Suspend,
    SuspendReason,
    Tool,
    ToolAnnotations,
    ToolCallPreview,
    ToolOutput,
    ToolReturn,
)
from dive.tools._toolset import Toolset, suggest_tool_names
from dive.tools._typed import TypedTool

__all__ = [
    "Background",
    "FunctionTool",
    "Governance",
    "NoTitlesSchema",
    "ResumedCall",
    "Suspend",
    "SuspendReason",
    "Tool",
    "ToolAnnotations",
    "ToolCallPreview",
    "ToolContext",
    "ToolOutput",
    "ToolProgressEvent",
    "ToolReturn",
    "ToolStreamEvent",
    "Toolset",
    "TypedTool",
    "build_definition",
    "format_validation_error",
    "schema_of",
    "suggest_tool_names",
    "tool",
    "validate_against_schema",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
