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
    """How the model may use tools: ``auto``, ``any``, ``tool`` (needs ``name``) or ``none``.

    Attributes:
        type: ``auto`` (the model decides), ``any`` (some tool), ``tool`` (the one named) or
            ``none`` (no tool).
        name: the tool to call when ``type`` is ``tool``.
        disable_parallel: at most one tool call per response.
    """

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

    Attributes:
        max_tokens: the output token limit of each call.
        temperature: sampling temperature (each provider checks its own range).
        top_p: nucleus sampling cut-off.
        top_k: sample from the k most likely tokens only.
        presence_penalty: penalty for tokens already present (OpenAI-style providers).
        frequency_penalty: penalty by how often tokens occurred (OpenAI-style providers).
        stop_sequences: texts that end the output when generated.
        parallel_tool_calls: let the model ask for several tool calls in one response.
        tool_choice: how the model may use tools.
        caching: prompt caching on (cache breakpoints are placed for the provider) or off
            (Gemini caches implicitly and refuses ``False``).
        cache_ttl: the lifetime of cache writes: ``"5m"`` or ``"1h"``.
        reasoning_budget: thinking tokens per call (0 turns thinking off where the model allows).
        reasoning_effort: ``minimal``, ``low``, ``medium``, ``high``, ``xhigh`` or ``max``, mapped
            to each provider's effort or budget (clamped where a model says so).
        thinking: ``enabled``, ``adaptive`` (the model decides how much) or ``disabled``.
        thinking_display: ``summarized`` or ``omitted``: whether thinking text comes back.
        speed: ``fast`` asks for Anthropic's fast mode; ``standard`` is the default.
        service_tier: the provider's service tier (``auto``, ``standard_only``, ``flex``, ...).
        request_headers: extra HTTP headers for each call.
        metadata: request metadata for the provider (Anthropic sends ``user_id``, Gemini
            ``labels``).
        mcp_servers: remote MCP servers the provider connects to itself, each
            ``{"name", "url"}`` with optional ``authorization_token`` and ``allowed_tools``
            (Anthropic's MCP connector, OpenAI Responses' hosted ``mcp`` tool; Chat
            Completions and Gemini refuse them).
        context_management: Anthropic's server-side context management, sent as given.
        response_schema: a JSON schema the answer must follow (native structured output).
        response_schema_name: the schema's name, where the provider wants one.
        strict: a setting the provider cannot honour raises ``UnsupportedSettingError`` (True) or is
            dropped with a warning (False).
        cache_first_user_block: mark the first block of the first user message for the prompt cache
            on the first request of a conversation (Anthropic).
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
        """A copy where every non-None field of ``other`` replaces this one's.

        Args:
            other: the settings to lay over these (None changes nothing).
        """
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
    """One model call: what to send, provider-neutral.

    Attributes:
        system: the system prompt.
        messages: the conversation, oldest first.
        tools: the tools the model may call.
        settings: the call's settings.
        prompt_cache_key: a key for providers that route caching by one (OpenAI); others ignore it.
        metadata: free-form data about the call for custom models; dive's providers do not
            send it.
    """

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
