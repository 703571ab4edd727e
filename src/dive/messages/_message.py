"""The provider-neutral ``Message`` and its JSON form.

Role rules are deliberately *not* enforced here (so invalid histories can be represented and
diagnosed); :func:`dive.messages.validate_complete_turns` enforces them. Construction does
enforce the shape of a single message: a known role, kind and visibility, content made of
blocks, and at most one ``ToolResult``, alone in its message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, Self, cast

from pydantic import ConfigDict

from dive.errors import MessageValidationError
from dive.messages._blocks import (
    BLOCK_CLASSES,
    ContentBlock,
    TextBlock,
    ToolCall,
    ToolResult,
)
from dive.messages._fields import named_fields
from dive.messages.codec import (
    EMPTY,
    FORBID_EXTRA,
    JSONValue,
    decode,
    dumps,
    empty,
    freeze_mapping,
)
from dive.messages.codec import to_jsonable as _to_jsonable

__all__ = [
    "KINDS",
    "ROLES",
    "VISIBILITIES",
    "Message",
    "MessageKind",
    "ProviderState",
    "Role",
    "Visibility",
    "messages_from_json",
    "messages_to_json",
]

Role = Literal["system", "user", "assistant", "tool"]
MessageKind = Literal[
    "standard", "branch_summary", "compaction_summary", "command_output", "custom"
]
Visibility = Literal["shared", "private"]

ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
KINDS: frozenset[str] = frozenset(
    {"standard", "branch_summary", "compaction_summary", "command_output", "custom"}
)
VISIBILITIES: frozenset[str] = frozenset({"shared", "private"})


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderState:
    """Opaque replay data from one provider's wire API (``data`` is JSON).

    Attributes:
        provider: the provider label (``anthropic``, ``openai``, ``gcp.vertex_ai``, ...).
        api: the wire API the data belongs to (``responses``, ``generate_content``, ...).
        data: the replay data, opaque JSON.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    provider: str
    api: str
    data: JSONValue = None


def _check_member(value: object, allowed: frozenset[str], field: str) -> None:
    if value not in allowed:
        raise MessageValidationError(
            f"unknown {field} {value!r}; expected one of {', '.join(sorted(allowed))}", path=field
        )


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a conversation.

    Tool calls live in assistant messages; each result lives in its own ``tool`` message.

    Attributes:
        role: ``system``, ``user``, ``assistant`` or ``tool``.
        content: the content blocks, in order.
        kind: ``standard``; ``compaction_summary`` and ``branch_summary`` (summaries),
            ``command_output`` (a command the user ran) are sent as text of their role; ``custom``
            is stored but never sent to a provider.
        visibility: ``shared`` (every view) or ``private`` (only the owning agent's model sees it;
            ``shared_view`` removes it at agent boundaries).
        id: an id for the message, if any.
        name: the author, or the tool's name on tool messages.
        metadata: string annotations for applications, never sent to a model.
        provider_state: replay data from the provider that produced the message, if any.
        created_at: when the message was made (the constructors set it).
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    role: Role
    content: tuple[ContentBlock, ...] = ()
    kind: MessageKind = "standard"
    visibility: Visibility = "shared"
    id: str | None = None
    name: str | None = None
    metadata: Mapping[str, str] = field(default_factory=empty)
    provider_state: ProviderState | None = None
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            _check_member(self.role, ROLES, "role")
        if self.kind != "standard" and self.kind not in KINDS:
            _check_member(self.kind, KINDS, "kind")
        if self.visibility != "shared" and self.visibility not in VISIBILITIES:
            _check_member(self.visibility, VISIBILITIES, "visibility")
        given: Any = self.content
        if type(given) is not tuple:
            if isinstance(given, str) or not isinstance(given, Sequence):
                raise MessageValidationError("must be a sequence of content blocks", path="content")
            object.__setattr__(self, "content", tuple(cast("Sequence[Any]", given)))
        content: tuple[object, ...] = self.content
        results = 0
        for i, block in enumerate(content):
            if not isinstance(block, BLOCK_CLASSES):
                raise MessageValidationError(
                    f"expected a content block, got {type(block).__name__}", path=f"content[{i}]"
                )
            if isinstance(block, ToolResult):
                results += 1
        if results and len(content) > 1:
            raise MessageValidationError(
                "a tool result must be the only block of its message"
                if results == 1
                else "a message may carry at most one tool result",
                path="content",
            )
        if self.metadata is not EMPTY:
            object.__setattr__(self, "metadata", freeze_mapping(self.metadata))
        ts = self.created_at
        if ts is not None and (ts.tzinfo is None or ts.utcoffset()):
            object.__setattr__(
                self,
                "created_at",
                ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC),
            )

    # --- derived ---------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The text blocks, concatenated."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The client tool calls, in order."""
        return tuple([b for b in self.content if isinstance(b, ToolCall)])

    @property
    def tool_result(self) -> ToolResult | None:
        """The tool result block, or None."""
        for b in self.content:
            if isinstance(b, ToolResult):
                return b
        return None

    # --- constructors ----------------------------------------------------------------------

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> Message:
        """A user message holding one text block.

        Args:
            text: the message's text.
            kwargs: other fields of :class:`Message`.
        """
        return cls(role="user", content=(TextBlock(text=text),), created_at=_now(), **kwargs)

    @classmethod
    def system(cls, text: str, **kwargs: Any) -> Message:
        """A system message holding one text block.

        Args:
            text: the system prompt's text.
            kwargs: other fields of :class:`Message`.
        """
        return cls(role="system", content=(TextBlock(text=text),), created_at=_now(), **kwargs)

    @classmethod
    def assistant(cls, *blocks: ContentBlock | str, **kwargs: Any) -> Message:
        """An assistant message; strings become text blocks.

        Args:
            blocks: content blocks; a string becomes a text block.
            kwargs: other fields of :class:`Message`.
        """
        content = tuple(TextBlock(text=b) if isinstance(b, str) else b for b in blocks)
        return cls(role="assistant", content=content, created_at=_now(), **kwargs)

    @classmethod
    def tool(cls, result: ToolResult, **kwargs: Any) -> Message:
        """A tool message carrying one result.

        Args:
            result: the tool result the message carries.
            kwargs: other fields of :class:`Message` (``name`` defaults to the result's).
        """
        kwargs.setdefault("name", result.name)
        return cls(role="tool", content=(result,), created_at=_now(), **kwargs)

    def with_(self, **changes: Any) -> Self:
        """A copy with the given fields replaced.

        Args:
            changes: fields to replace, by name.
        """
        return replace(self, **changes)

    # --- JSON --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (defaults omitted)."""
        return _to_jsonable(self)

    def to_json(self) -> str:
        """Compact JSON text."""
        return dumps(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Decode and validate; raises ``MessageValidationError`` naming the field path.

        Args:
            data: plain JSON data, as ``to_dict`` gives it.
        """
        return decode(Message, data)

    @classmethod
    def from_json(cls, text: str | bytes) -> Message:
        """Decode JSON text; raises ``MessageValidationError`` naming the field path.

        Args:
            text: JSON text, as ``to_json`` gives it.
        """
        return decode(Message, text)


def _now() -> datetime:
    return datetime.now(UTC)


def messages_to_json(messages: Sequence[Message]) -> str:
    """Encode a history as a JSON array.

    Args:
        messages: the history, oldest first.
    """
    return dumps(tuple(messages))


def messages_from_json(data: str | bytes | Sequence[Any]) -> tuple[Message, ...]:
    """Decode a history; errors name the path, e.g. ``messages[3].content[0].tool_call_id``.

    Args:
        data: JSON text of an array of messages, or the array as plain data.
    """
    return tuple(decode(tuple[Message, ...], data, root="messages"))
