"""``ToolDefinition``: what the model is told about a tool, plus its governance fields.

One flat set of governance fields; the agent loop enforces each of them at run time
(permissions, approval, timeout, retry policy, effect type, terminal, sequential).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict

from dive.errors import ToolDefinitionError
from dive.messages._blocks import CacheControl
from dive.messages._fields import named_fields
from dive.messages.codec import (
    EMPTY,
    FORBID_EXTRA,
    JSONValue,
    decode,
    empty,
    freeze_mapping,
    to_jsonable,
)

__all__ = [
    "EFFECT_ORDER",
    "OBJECT_SCHEMA",
    "RISK_ORDER",
    "EffectType",
    "RiskLevel",
    "ToolDefinition",
    "ToolRetryPolicy",
]

EffectType = Literal["read_only", "write", "external_side_effect"]
RiskLevel = Literal["low", "medium", "high", "critical"]

RISK_ORDER: Mapping[str, int] = MappingProxyType({"low": 0, "medium": 1, "high": 2, "critical": 3})
EFFECT_ORDER: Mapping[str, int] = MappingProxyType(
    {"read_only": 0, "write": 1, "external_side_effect": 2}
)

OBJECT_SCHEMA: Mapping[str, JSONValue] = MappingProxyType({"type": "object", "properties": {}})

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRetryPolicy:
    """Retries for idempotent or read-only tools. ``max_attempts`` counts all attempts.

    Attributes:
        max_attempts: every attempt, the first included (at least 1).
        backoff: seconds before the first retry; each retry doubles it.
        max_backoff: the longest delay between attempts, in seconds.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    max_attempts: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ToolDefinitionError("retry_policy.max_attempts must be at least 1")
        if self.backoff < 0 or self.max_backoff < 0:
            raise ToolDefinitionError("retry_policy backoffs must not be negative")

    def delay(self, attempt: int) -> float:
        """The base delay before retry ``attempt`` (0-based), before jitter.

        Args:
            attempt: the retry's number, from 0.
        """
        return min(self.backoff * (2**attempt), self.max_backoff)


@named_fields
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """A tool as the model sees it, with the governance fields the runtime enforces.

    Attributes:
        name: what the model calls: 1-64 letters, digits, ``_`` or ``-``.
        description: what the tool does, for the model.
        input_schema: the JSON schema of the arguments, passed to the provider losslessly.
        terminal: a successful call ends the turn; its result is the turn's answer.
        sequential_only: any call to it makes its batch run one call at a time.
        halts_batch: when a call fails, the later calls of its batch are not run.
        tags: labels for permissions, filtering and traces.
        origin: where the tool comes from: ``local``, ``mcp:<server>``, ``subagent:<name>`` or
            ``provider``.
        metadata: string annotations (the permission engine reads ``dive.permission.*`` keys).
        cache_control: a prompt-cache breakpoint after this tool's definition, or None.
        required_permissions: permissions the agent must grant (``granted_permissions``) before a
            call runs.
        requires_approval: ask the approval policy before each call (the default policy suspends the
            turn for a person).
        risk_level: ``low``, ``medium``, ``high`` or ``critical``; None compares as ``medium``.
        effect_type: ``read_only``, ``write`` or ``external_side_effect`` (None is treated as the
            last); read-only calls need no reconciling.
        idempotent: calling it twice with the same input has the effect of calling it once (lets a
            retry policy retry it).
        timeout: seconds a call may run; past it the call is ``unknown`` and answered with a timeout
            text.
        retry_policy: retries of failed calls; needs ``idempotent`` or ``read_only``.
    """

    __pydantic_config__: ClassVar[ConfigDict] = FORBID_EXTRA
    name: str
    description: str = ""
    input_schema: Mapping[str, JSONValue] = field(default_factory=lambda: OBJECT_SCHEMA)
    terminal: bool = False
    sequential_only: bool = False
    halts_batch: bool = False
    tags: frozenset[str] = frozenset()
    origin: str = "local"
    metadata: Mapping[str, str] = field(default_factory=empty)
    cache_control: CacheControl | None = None
    required_permissions: frozenset[str] = frozenset()
    requires_approval: bool = False
    risk_level: RiskLevel | None = None
    effect_type: EffectType | None = None
    idempotent: bool = False
    timeout: float | None = None
    retry_policy: ToolRetryPolicy | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ToolDefinitionError(
                f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_' or '-'"
            )
        if self.risk_level is not None and self.risk_level not in RISK_ORDER:
            raise ToolDefinitionError(
                f"tool {self.name!r}: risk_level must be one of low, medium, high, critical"
            )
        if self.effect_type is not None and self.effect_type not in EFFECT_ORDER:
            raise ToolDefinitionError(
                f"tool {self.name!r}: effect_type must be read_only, write or external_side_effect"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ToolDefinitionError(f"tool {self.name!r}: timeout must be > 0 seconds")
        policy = self.retry_policy
        if (
            policy is not None
            and policy.max_attempts > 1
            and not (self.idempotent or self.read_only)
        ):
            raise ToolDefinitionError(
                "retry_policy requires idempotent=True or effect_type='read_only'"
            )
        for attr in ("tags", "required_permissions"):
            value: Any = getattr(self, attr)
            if not isinstance(value, frozenset):
                object.__setattr__(self, attr, frozenset(value))  # pyright: ignore[reportUnknownArgumentType]
        object.__setattr__(self, "input_schema", freeze_mapping(self.input_schema))
        if self.metadata is not EMPTY:
            object.__setattr__(self, "metadata", freeze_mapping(self.metadata))

    @property
    def read_only(self) -> bool:
        """True exactly when ``effect_type == "read_only"``."""
        return self.effect_type == "read_only"

    @property
    def risk_rank(self) -> int:
        """Risk as an integer; ``None`` compares as medium."""
        return RISK_ORDER[self.risk_level or "medium"]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (defaults omitted)."""
        return to_jsonable(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolDefinition:
        """Decode and validate.

        Args:
            data: plain JSON data, as ``to_dict`` gives it.
        """
        return decode(ToolDefinition, data)
