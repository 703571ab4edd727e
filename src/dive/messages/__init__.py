"""The provider-neutral message model.

Messages, content blocks and tool definitions are frozen, slotted, keyword-only dataclasses
discriminated by ``type`` that round-trip exactly through JSON. This package imports no
provider SDK; providers convert at their boundary.
"""

from dive.messages._backstop import UNKNOWN_RESULT_TEXT, answer_dangling_calls
from dive.messages._blocks import (
    BLOCK_CLASSES,
    Base64Source,
    CacheControl,
    ContentBlock,
    DocumentBlock,
    DocumentSource,
    FileSource,
    ImageBlock,
    ImageSource,
    RedactedThinkingBlock,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    ToolResultContent,
    UnknownBlock,
    UrlSource,
)
from dive.messages._message import (
    Message,
    MessageKind,
    ProviderState,
    Role,
    Visibility,
    messages_from_json,
    messages_to_json,
)
from dive.messages._tooldef import (
    OBJECT_SCHEMA,
    EffectType,
    RiskLevel,
    ToolDefinition,
    ToolRetryPolicy,
)
from dive.messages._validate import complete_turn_boundary, shared_view, validate_complete_turns
from dive.messages.codec import JSONValue

__all__ = [
    "BLOCK_CLASSES",
    "OBJECT_SCHEMA",
    "UNKNOWN_RESULT_TEXT",
    "Base64Source",
    "CacheControl",
    "ContentBlock",
    "DocumentBlock",
    "DocumentSource",
    "EffectType",
    "FileSource",
    "ImageBlock",
    "ImageSource",
    "JSONValue",
    "Message",
    "MessageKind",
    "ProviderState",
    "RedactedThinkingBlock",
    "RiskLevel",
    "Role",
    "ServerToolCall",
    "ServerToolResult",
    "TextBlock",
    "TextSource",
    "ThinkingBlock",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolResultContent",
    "ToolRetryPolicy",
    "UnknownBlock",
    "UrlSource",
    "Visibility",
    "answer_dangling_calls",
    "complete_turn_boundary",
    "messages_from_json",
    "messages_to_json",
    "shared_view",
    "validate_complete_turns",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
