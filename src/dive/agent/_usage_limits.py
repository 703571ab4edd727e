"""``UsageLimits``: a turn's budget of model requests, tool calls, tokens and cost.

Checked at step boundaries: before every model call (requests, tokens and cost used so
far), and before a response's tool calls run (the calls would pass a tool-call limit, or the
response itself used up tokens or cost). Reaching a limit ends the turn incomplete with
reason ``usage_limit`` (next step ``input``: raise the limit or ask for less); calls that did
not run are answered "Not run", so the turn closes like any other.

With ``count_tokens_first``, a request is counted before it is sent (where the model can
count tokens) and not sent when it would pass an input or total token limit.

Session limits count every recorded turn of the session plus the running one; the session's
turns are read once when the run starts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from dive.errors import UserError
from dive.llm import Usage
from dive.messages import ToolCall
from dive.messages.codec import empty, freeze_mapping
from dive.turns import Turn

__all__ = [
    "SessionSpent",
    "UsageLimits",
    "exceeded_after_response",
    "exceeded_before_call",
    "exceeded_by_calls",
    "exceeded_by_request",
    "spent_by",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageLimits:
    """Per-turn usage limits; None means no limit.

    Attributes:
        requests: model requests in the turn.
        tool_calls: tool calls executed in the turn.
        tool_calls_by_tool: per tool name, calls executed in the turn.
        input_tokens: input tokens (uncached, cache writes and cache reads).
        output_tokens: output tokens (reasoning included).
        total_tokens: input plus output tokens.
        cost: dollars (needs known prices: an unknown cost never ends a turn).
        count_tokens_first: before each request, count its input tokens with the model's
            token counter (Anthropic's ``count_tokens``) and do not send a request that
            would pass the input or total token limit. Counting is one extra (free) API call
            per request; a model without a counter, or a count that fails, is checked after
            the response as without this option.
    """

    requests: int | None = None
    tool_calls: int | None = None
    tool_calls_by_tool: Mapping[str, int] = field(default_factory=empty)
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None
    count_tokens_first: bool = False

    def __post_init__(self) -> None:
        for name in ("requests", "tool_calls", "input_tokens", "output_tokens", "total_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UserError(f"UsageLimits({name}={value}) must not be negative")
        if self.cost is not None and self.cost < 0:
            raise UserError(f"UsageLimits(cost={self.cost}) must not be negative")
        for tool, n in self.tool_calls_by_tool.items():
            if n < 0:
                raise UserError(f"UsageLimits(tool_calls_by_tool[{tool!r}]={n}) is negative")
        object.__setattr__(self, "tool_calls_by_tool", freeze_mapping(self.tool_calls_by_tool))


def _input(u: Usage) -> int:
    return u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens


def _tokens(limits: UsageLimits, used: Usage) -> str | None:
    checks = (
        ("input token", limits.input_tokens, _input(used)),
        ("output token", limits.output_tokens, used.output_tokens),
        ("total token", limits.total_tokens, _input(used) + used.output_tokens),
    )
    for what, limit, value in checks:
        if limit is not None and value >= limit:
            return f"the {what} limit ({limit:,}) was reached: {value:,} used"
    if limits.cost is not None and used.cost is not None and used.cost >= limits.cost:
        return f"the cost limit (${limits.cost:g}) was reached: ${used.cost:.4f} used"
    return None


def exceeded_before_call(limits: UsageLimits, used: Usage) -> str | None:
    """Why the next model call may not be made, or None."""
    if limits.requests is not None and used.requests >= limits.requests:
        return f"the request limit ({limits.requests}) was reached"
    return _tokens(limits, used)


def exceeded_by_request(limits: UsageLimits, used: Usage, counted: int) -> str | None:
    """Why a request of ``counted`` input tokens may not be sent, or None."""
    checks = (
        ("input token", limits.input_tokens, _input(used)),
        ("total token", limits.total_tokens, _input(used) + used.output_tokens),
    )
    for what, limit, value in checks:
        if limit is not None and value + counted > limit:
            return (
                f"the {what} limit ({limit:,}) would be passed: {value:,} used, and the next "
                f"request counts {counted:,} input tokens"
            )
    return None


def exceeded_after_response(limits: UsageLimits, used: Usage) -> str | None:
    """Why a response's calls may not run because of what it used, or None."""
    return _tokens(limits, used)


def exceeded_by_calls(
    limits: UsageLimits, executed: Mapping[str, int], calls: tuple[ToolCall, ...]
) -> str | None:
    """Why ``calls`` may not run given the calls ``executed`` so far (by tool), or None."""
    total = sum(executed.values())
    if limits.tool_calls is not None and total + len(calls) > limits.tool_calls:
        return (
            f"the tool-call limit ({limits.tool_calls}) would be passed: {total} executed, "
            f"{len(calls)} requested"
        )
    wanted = Counter(c.name for c in calls)
    for name, n in wanted.items():
        cap = limits.tool_calls_by_tool.get(name)
        if cap is not None and executed.get(name, 0) + n > cap:
            return f"the limit for tool {name!r} ({cap}) would be passed"
    return None


@dataclass(frozen=True, slots=True)
class SessionSpent:
    """What the session's recorded turns used, per turn (read once when a run starts)."""

    turns: tuple[tuple[str, Usage, Mapping[str, int]], ...] = ()

    def excluding(self, turn_id: str) -> tuple[Usage, Counter[str]]:
        """Usage and tool calls by tool of every recorded turn but ``turn_id``.

        ``turn_id`` is the running turn, whose own usage the run already counts.
        """
        usage = Usage.ZERO  # a known zero: ``Usage()`` has an unknown cost
        calls: Counter[str] = Counter()
        for tid, used, counts in self.turns:
            if tid != turn_id:
                usage = usage + used
                calls.update(counts)
        return usage, calls


def spent_by(turns: Sequence[Turn]) -> SessionSpent:
    """The ``SessionSpent`` of a session's turn records."""
    return SessionSpent(
        tuple(
            (t.id, t.usage, Counter(r.name for r in t.tool_calls if r.state != "not_started"))
            for t in turns
        )
    )
