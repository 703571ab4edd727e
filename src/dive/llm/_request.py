"""The provider-neutral model request and its settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict

from dive.errors import UserError
from dive.messages import Message, ToolDefinition
from dive.messages.codec import FORBID_EXTRA, JSONValue, empty, freeze_mapping

__all__ = ["ModelRequest", "ModelSettings", "ToolChoice"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolChoice:
    """How the model may use tools: ``auto``, ``any``, ``tool`` (needs ``name``) or ``none``."""

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    type: Literal["auto", "any", "tool", "none"] = "auto"
    name: str | None = None
    disable_parallel: bool = False

    def __post_init__(self) -> None:
        if self.type not in ("auto", "any", "tool", "none"):
            raise UserError(f"tool_choice type {self.type!r} is not auto, any, tool or none")
        if (self.type == "tool") != (self.name is not None):
            raise UserError('tool_choice needs a name exactly when type is "tool"')

    @property
    def forces_tool(self) -> bool:
        """True for ``any`` and ``tool``."""
        return self.type in ("any", "tool")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """Sampling, reasoning and caching settings. ``None`` means the provider default.

    ``merge`` overlays another settings object: its non-None fields win.
    ``context_management`` is Anthropic's server-side context management, sent as given
    (``{"edits": [{"type": "clear_tool_uses_20250919"}]}`` for context editing,
    ``{"edits": [{"type": "compact_20260112"}]}`` for server-side compaction); the beta
    header each edit needs is added. Other providers refuse it.
    ``cache_first_user_block`` (Anthropic) marks the first block of the first user message for
    the prompt cache while that message is the newest one (the first request of a
    conversation); the marker goes on that request only, never into the history.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    parallel_tool_calls: bool | None = None
    tool_choice: ToolChoice | None = None
    caching: bool | None = None
    cache_ttl: Literal["5m", "1h"] | None = None
    cache_first_user_block: bool | None = None
    reasoning_budget: int | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high", "xhigh", "max"] | None = None
    thinking: Literal["enabled", "adaptive", "disabled"] | None = None
    thinking_display: Literal["summarized", "omitted"] | None = None
    speed: Literal["standard", "fast"] | None = None
    service_tier: str | None = None
    request_headers: Mapping[str, str] | None = None
    metadata: Mapping[str, str] | None = None
    mcp_servers: tuple[Mapping[str, JSONValue], ...] | None = None
    context_management: Mapping[str, JSONValue] | None = None
    response_schema: Mapping[str, JSONValue] | None = None
    response_schema_name: str | None = None
    strict: bool = True

    def __post_init__(self) -> None:
        if self.max_tokens is not None and self.max_tokens < 0:
            raise UserError("max_tokens must not be negative")
        if self.reasoning_budget is not None and self.reasoning_budget < 0:
            raise UserError("reasoning_budget must not be negative")
        if self.request_headers is not None:
            object.__setattr__(self, "request_headers", freeze_mapping(self.request_headers))
        if self.metadata is not None:
            object.__setattr__(self, "metadata", freeze_mapping(self.metadata))

    def merge(self, other: ModelSettings | None) -> ModelSettings:
        """A copy where every non-None field of ``other`` replaces this one's."""
        if other is None:
            return self
        changes = {
            f.name: v
            for f in fields(other)
            if f.name != "strict" and (v := getattr(other, f.name)) is not None
        }
        if not other.strict:
            changes["strict"] = False
        return replace(self, **changes) if changes else self


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One model call: what to send, provider-neutral."""

    system: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)
    prompt_cache_key: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=empty)

    @property
    def tool_choice(self) -> ToolChoice | None:
        """Shortcut for ``settings.tool_choice``."""
        return self.settings.tool_choice
