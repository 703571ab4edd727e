"""The provider-neutral model response."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dive.llm._stop import StopKind, classify_stop_reason
from dive.llm._usage import Usage
from dive.messages import ContentBlock, Message, ProviderState, ToolCall
from dive.messages.codec import JSONValue

__all__ = ["ModelResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """What one model call produced.

    ``stop_reason`` is the provider's raw value; ``stop_kind`` its classification
    (``classify_stop_reason``), always derived from ``stop_reason``. A custom model that leaves
    ``stop_reason`` unset (None) on a response with tool calls gets ``stop_kind="tool_use"``
    (the calls run); set ``stop_reason`` to the provider's raw value otherwise: an empty or
    unknown value with tool calls fails closed (the calls are not run, the turn ends
    ``provider_stopped``).

    Attributes:
        content: the response's content blocks.
        stop_reason: the provider's raw stop reason.
        stop_details: the provider's extra stop information, JSON.
        stop_sequence: the stop sequence that ended the output, if one did.
        usage: the call's usage.
        id: the provider's response id, if any.
        model: the model that answered, as the provider names it.
        requested_model: the model the request named.
        provider_state: replay data for the response, if the provider has any.
        stop_kind: derived from ``stop_reason`` (any value given is replaced).
    """

    content: tuple[ContentBlock, ...] = ()
    stop_reason: str | None = None
    stop_details: JSONValue = None
    stop_sequence: str | None = None
    usage: Usage = field(default_factory=Usage)
    id: str | None = None
    model: str | None = None
    requested_model: str | None = None
    provider_state: ProviderState | None = None
    stop_kind: StopKind = field(default="other")

    def __post_init__(self) -> None:
        if type(self.content) is not tuple:
            object.__setattr__(self, "content", tuple(self.content))
        kind = classify_stop_reason(self.stop_reason)
        if self.stop_reason is None and any(isinstance(b, ToolCall) for b in self.content):
            kind = "tool_use"
        object.__setattr__(self, "stop_kind", kind)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The client tool calls, in order."""
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    @property
    def text(self) -> str:
        """The text, concatenated."""
        return self.message().text

    def message(self, **kwargs: Any) -> Message:
        """The assistant message this response adds to the history.

        Args:
            kwargs: other fields of the :class:`~dive.messages.Message`.
        """
        return Message(
            role="assistant",
            content=self.content,
            provider_state=self.provider_state,
            **kwargs,
        )
