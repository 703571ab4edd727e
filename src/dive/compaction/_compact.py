"""``compact_messages``: a history made shorter by summarising its middle.

Flow: find the cut (:mod:`dive.compaction._cut`: a kept head, the span, a kept tail that
starts at a unit boundary, never splitting a tool exchange) → render the span as a
transcript, each block capped → chunk it to the summariser's input budget → summarise
(a rolling summary when it takes more than one request) → the compacted history
``head + [summary] + tail``, validated before it is returned. The summary is a ``user``
message of kind ``compaction_summary`` whose metadata says what it replaced and what it cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dive.compaction._cut import choose_cut, complete_prefix
from dive.compaction._summarise import DEFAULT_INSTRUCTIONS, Summary, chunk_budget, summarise
from dive.compaction._tokens import ContextSize, estimate_message, estimate_tokens, measure
from dive.compaction._transcript import chunk, render
from dive.errors import UserError
from dive.llm import Model, Usage
from dive.messages import Message, ToolDefinition, validate_complete_turns

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_MAX_INPUT_TOKENS",
    "DEFAULT_THRESHOLD",
    "CompactionResult",
    "compact_messages",
    "should_compact",
    "summary_message",
]

DEFAULT_THRESHOLD = 100_000
DEFAULT_KEEP_RECENT_TOKENS = 20_000
DEFAULT_MAX_INPUT_TOKENS = 150_000
DEFAULT_MAX_SUMMARY_TOKENS = 8_000
DEFAULT_MAX_BLOCK_CHARS = 20_000

SUMMARY_PREFACE = (
    "The earlier part of this conversation was compacted into the summary below; the "
    "messages after it continue verbatim."
)


def should_compact(usage: Usage | int | None, threshold: int = DEFAULT_THRESHOLD) -> bool:
    """True when a context of this size should be compacted.

    Args:
        usage: the usage of the latest model call (its total input tokens are the context
            it was sent: uncached, cache writes and cache reads), or a token count. None
            (nothing reported) is never over the threshold.
        threshold: compact at or above this many tokens.
    """
    if usage is None:
        return False
    tokens = usage if isinstance(usage, int) else usage.total_input_tokens
    return tokens >= threshold


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionResult:
    """What a compaction did, and what it cost.

    Attributes:
        messages: the compacted history (``head + [summary] + tail``); the input unchanged
            when there was nothing to compact.
        summary: the ``compaction_summary`` message, or None when nothing was compacted.
        head: the messages kept verbatim before the summary (the first exchange).
        tail: the messages kept verbatim after it (the most recent ones).
        compacted: how many messages the summary replaced.
        tokens_before: the context before (see ``measured``).
        tokens_after: the context after, measured the same way.
        measured: ``counted`` (by the model) or ``estimated``.
        usage: the summariser's usage (its cost in ``usage.cost``; None when unknown).
        passes: summariser requests made (more than one: a summary of a summary).
        revision: the session revision the compaction was recorded at (``compact_session``
            and a persisting ``compaction_hook``), else None.
    """

    messages: tuple[Message, ...]
    summary: Message | None = None
    head: tuple[Message, ...] = ()
    tail: tuple[Message, ...] = ()
    compacted: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    measured: str = "estimated"
    usage: Usage = field(default_factory=lambda: Usage.ZERO)
    passes: int = 0
    revision: int | None = None

    @property
    def changed(self) -> bool:
        """True when something was compacted."""
        return self.summary is not None

    @property
    def cost(self) -> float | None:
        """The summariser's cost in dollars (None: unknown)."""
        return self.usage.cost

    @property
    def tokens_saved(self) -> int:
        """``tokens_before - tokens_after``."""
        return self.tokens_before - self.tokens_after

    @property
    def cache_prefix_kept(self) -> int:
        """Messages before the summary, unchanged: the prompt-cache prefix that survives.

        Everything from the summary on is new to the provider's cache: the next request
        writes about ``cache_rewrite_tokens`` to it (and pays the cache-write price once).
        """
        return len(self.head)

    @property
    def cache_rewrite_tokens(self) -> int:
        """Estimated tokens after the kept prefix that the next request writes to the cache."""
        if self.summary is None:
            return 0
        return estimate_tokens((self.summary, *self.tail))


def summary_message(
    text: str, *, compacted: int, model: Model, passes: int, usage: Usage
) -> Message:
    """The ``compaction_summary`` message: a ``user`` message carrying the summary."""
    metadata = {
        "compacted_messages": str(compacted),
        "summarised_by": f"{model.provider}:{model.name}",
        "passes": str(passes),
        "input_tokens": str(usage.total_input_tokens),
        "output_tokens": str(usage.output_tokens),
    }
    if usage.cost is not None:
        metadata["cost"] = f"{usage.cost:.6f}"
    body = f"{SUMMARY_PREFACE}\n\n<summary>\n{text}\n</summary>"
    return Message.user(body, kind="compaction_summary", metadata=metadata)


async def compact_messages(
    model: Model,
    messages: Sequence[Message],
    *,
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
    keep_first: bool = True,
    instructions: str | None = None,
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS,
    max_summary_tokens: int = DEFAULT_MAX_SUMMARY_TOKENS,
    max_block_chars: int = DEFAULT_MAX_BLOCK_CHARS,
    system: str = "",
    tools: Sequence[ToolDefinition] = (),
    counter: Model | None = None,
) -> CompactionResult:
    """Summarise the middle of ``messages`` with ``model``; keep the first unit and the tail.

    Args:
        model: the summariser.
        messages: the history (valid; a trailing call still awaiting its result is kept).
        keep_recent_tokens: about how many tokens of the most recent messages stay verbatim.
        keep_first: keep the first exchange (usually the original request) verbatim.
        instructions: the summariser's system prompt (default: a continuation summary in
            ``<summary>`` tags).
        max_input_tokens: the most one summariser request may carry; a longer span is
            summarised in several requests, each building on the summary so far.
        max_summary_tokens: the summary's output limit (``max_tokens`` of each request).
        max_block_chars: each text or tool-result block is cut to this many characters in
            the summariser's transcript (its middle removed).
        system: the agent's system prompt, counted in the token figures.
        tools: the agent's tool definitions, counted in the token figures.
        counter: the model that counts the context before and after (default: ``model``
            when it is a ``TokenCounter``; otherwise the figures are estimates).

    Returns:
        A :class:`CompactionResult`; ``changed`` is False when there was nothing to
        summarise (a short history, or one already compacted down to a summary).

    Raises:
        UserError: a budget too small to work with, or a summariser that returned nothing.
        IncompleteToolTurnError: ``messages`` is not a valid history.
        ProviderError: the summariser's request failed.
    """
    if keep_recent_tokens < 0:
        raise UserError("keep_recent_tokens must not be negative")
    history = tuple(messages)
    budget = chunk_budget(
        instructions or DEFAULT_INSTRUCTIONS, max_input_tokens, max_summary_tokens
    )
    cut = choose_cut(
        history,
        keep_recent_tokens=keep_recent_tokens,
        keep_first=keep_first,
        tokens_of=estimate_message,
    )
    counting = counter if counter is not None else model
    before = await measure(counting, history, system=system, tools=tools)
    if cut.empty:
        return CompactionResult(
            messages=history,
            tokens_before=before.tokens,
            tokens_after=before.tokens,
            measured=before.how,
        )
    span = history[cut.head : cut.tail]
    entries = [render(m, max_block_chars=max_block_chars) for m in span]
    done = await summarise(
        model,
        chunk(entries, budget),
        instructions=instructions or DEFAULT_INSTRUCTIONS,
        max_input_tokens=max_input_tokens,
        max_summary_tokens=max_summary_tokens,
    )
    summary = summary_message(
        done.text, compacted=len(span), model=model, passes=done.passes, usage=done.usage
    )
    head, tail = history[: cut.head], history[cut.tail :]
    compacted = (*head, summary, *tail)
    validate_complete_turns(compacted[: len(compacted) - _pending(tail)])
    after = await measure(counting, compacted, system=system, tools=tools)
    return _result(compacted, summary, head, tail, before.tokens, after, done)


def _result(
    compacted: tuple[Message, ...],
    summary: Message,
    head: tuple[Message, ...],
    tail: tuple[Message, ...],
    before: int,
    after: ContextSize,
    done: Summary,
) -> CompactionResult:
    return CompactionResult(
        messages=compacted,
        summary=summary,
        head=head,
        tail=tail,
        compacted=int(summary.metadata["compacted_messages"]),
        tokens_before=before,
        tokens_after=after.tokens,
        measured=after.how,
        usage=done.usage,
        passes=done.passes,
    )


def _pending(tail: Sequence[Message]) -> int:
    """How many trailing messages form a pending call group (not yet answered)."""
    return len(tail) - complete_prefix(tail)
