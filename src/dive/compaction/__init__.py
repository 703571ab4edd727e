"""Compaction: keep long conversations inside the context window by summarising their middle.

dive never compacts on its own. Choose where:

- :func:`compact_session` (what ``/compact`` does): summarise a session's history and record
  the compaction in the session; ``load()`` then returns the compacted view and ``turns()``
  still returns every original record.
- :func:`compaction_hook`: a ``pre_generation`` hook that does the same automatically once
  the context reaches a threshold.
- :func:`mid_turn_compaction_hook`: a ``pre_iteration`` hook that shrinks only the working set
  a long turn sends to the model.
- :func:`compact_messages`: the pure step on a list of messages (stateless histories).

A compaction keeps the first exchange and the most recent messages verbatim and replaces the
middle with one ``compaction_summary`` message. It never splits a tool exchange (calls and
results are paired by id; a call still waiting for its result stays), and the summariser's
own requests stay inside ``max_input_tokens`` however long the history (a rolling summary of
a summary when one request is not enough). :class:`CompactionResult` reports the tokens
before and after, the summariser's usage and cost, and the prompt-cache effect. Anthropic's
server-side compaction and context editing are the provider-native alternative
(``ModelSettings(context_management=...)``). See ``docs/compaction.md``.
"""

from dive.compaction._compact import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_MAX_INPUT_TOKENS,
    DEFAULT_THRESHOLD,
    CompactionResult,
    compact_messages,
    should_compact,
)
from dive.compaction._hooks import VALUES_KEY, compaction_hook, mid_turn_compaction_hook
from dive.compaction._session import compact_session
from dive.compaction._summarise import DEFAULT_INSTRUCTIONS
from dive.compaction._tokens import estimate_tokens

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_MAX_INPUT_TOKENS",
    "DEFAULT_THRESHOLD",
    "VALUES_KEY",
    "CompactionResult",
    "compact_messages",
    "compact_session",
    "compaction_hook",
    "estimate_tokens",
    "mid_turn_compaction_hook",
    "should_compact",
]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
