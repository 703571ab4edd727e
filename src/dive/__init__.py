"""dive: one async agent loop with everything a serious agent needs."""

from dive import errors, llm, messages
from dive.errors import DiveError
from dive.llm import Model, ModelRequest, ModelResponse, ModelSettings, Usage
from dive.messages import Message, ToolCall, ToolDefinition, ToolResult

__version__ = "0.1.0"

__all__ = [
    "DiveError",
    "Message",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "Usage",
    "__version__",
    "errors",
    "llm",
    "messages",
]
