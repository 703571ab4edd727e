"""Automatic prompt caching on the byte serialization of ``_tokens``.

Per wire-apis.md B2, prompts of at least 1024 tokens are cached, hits in 128-token increments.

For a prompt of T tokens (T ≥ 1024), the cache keys are the hashes of its prefixes of
1024, 1152, 1280, … ≤ T tokens (4 bytes each), scoped by model and ``prompt_cache_key``
(sim choice: requests with different keys never share entries). A request reads the longest
prefix a live entry covers (``cached_tokens``); when its response starts every prefix key is
written or refreshed with the request's TTL (``prompt_cache_retention: "24h"`` → 24 h, else the
simulator's in-memory TTL). ``cache_write_tokens`` is the longest prefix minus the cached part.
Until the response starts, concurrent requests cannot see the entries.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

from dive.testing.anthropic._cache import SimClock
from dive.testing.openai._tokens import BYTES_PER_TOKEN, bytes_tokens

__all__ = ["CACHE_INCREMENT", "MIN_CACHED_PROMPT", "CachePlan", "PromptCache", "SimClock"]

MIN_CACHED_PROMPT = 1024
CACHE_INCREMENT = 128


@dataclass(frozen=True, slots=True, kw_only=True)
class CachePlan:
    """What one request reads and writes."""

    total_tokens: int
    cached_tokens: int = 0
    write_tokens: int = 0
    keys: tuple[bytes, ...] = ()
    ttl: float = 0.0


class PromptCache:
    """Live prefix entries, shared by every request to one simulator."""

    def __init__(
        self,
        clock: SimClock,
        *,
        min_tokens: int = MIN_CACHED_PROMPT,
        increment: int = CACHE_INCREMENT,
    ) -> None:
        self.clock = clock
        self.min_tokens = min_tokens
        self.increment = increment
        self._lock = threading.Lock()
        self._entries: dict[bytes, float] = {}

    def __len__(self) -> int:
        now = self.clock.now()
        with self._lock:
            return sum(1 for expires in self._entries.values() if expires > now)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def plan(self, prompt: bytes, *, model: str, cache_key: str | None, ttl: float) -> CachePlan:
        """Reads and writes for a prompt, without changing the cache."""
        total = max(1, bytes_tokens(len(prompt)))
        if total < self.min_tokens:
            return CachePlan(total_tokens=total)
        scope = hashlib.sha256(f"{model}\x00{cache_key or ''}".encode()).digest()
        running = hashlib.sha256(scope)
        boundaries: list[int] = []
        keys: list[bytes] = []
        start = 0
        first = -(-self.min_tokens // self.increment) * self.increment
        for tokens in range(first, total + 1, self.increment):
            end = tokens * BYTES_PER_TOKEN
            running.update(prompt[start:end])
            start = end
            boundaries.append(tokens)
            keys.append(running.copy().digest())
        now = self.clock.now()
        cached = 0
        with self._lock:
            for tokens, key in zip(reversed(boundaries), reversed(keys), strict=True):
                expires = self._entries.get(key)
                if expires is not None and expires > now:
                    cached = tokens
                    break
        longest = boundaries[-1] if boundaries else 0
        return CachePlan(
            total_tokens=total,
            cached_tokens=cached,
            write_tokens=max(0, longest - cached),
            keys=tuple(keys),
            ttl=ttl,
        )

    def commit(self, plan: CachePlan) -> None:
        """Write or refresh the plan's entries (the response has started)."""
        if not plan.keys:
            return
        now = self.clock.now()
        expires = now + plan.ttl
        with self._lock:
            for key in plan.keys:
                self._entries[key] = max(self._entries.get(key, 0.0), expires)
            for key in [k for k, e in self._entries.items() if e <= now]:
                del self._entries[key]
