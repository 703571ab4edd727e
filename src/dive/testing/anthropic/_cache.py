"""Prompt-cache accounting (wire-apis.md A9, "Simulator algorithm").

Flow for one request:

1. :func:`flatten` walks tools → system → messages and gives every block a prefix key: a
   running SHA-256 that mixes the model first, then each tool, the system-tier parameters
   (``speed``, citations on), each system block, the messages-tier parameters
   (``tool_choice``, thinking config, number of images), then each message block with its
   role. A change therefore invalidates its own tier and every later one (A9 item 11).
2. :func:`collect_breakpoints` finds the ``cache_control`` markers (plus the automatic one
   from a top-level ``cache_control``) and enforces at most four and 1h-before-5m.
3. :meth:`PromptCache.plan` looks back from each breakpoint over at most 20 positions for a
   live entry written by an earlier request; the hit is the furthest one. Reads are the
   tokens up to the hit, writes the tokens from the hit to the last breakpoint whose prefix
   reaches the model's minimum, split by each breakpoint's TTL; input is the rest.
4. :meth:`PromptCache.commit` runs when the response starts: it refreshes the hit's TTL and
   publishes one entry per written breakpoint. Until then concurrent requests cannot see them.

Time comes from a :class:`SimClock`, which only moves when a test advances it (or follows the
monotonic clock when ``realtime=True``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dive.testing.anthropic._errors import invalid_request
from dive.testing.anthropic._request import Block, ParsedRequest, as_dict, as_list
from dive.testing.anthropic._tokens import block_tokens, canonical, strip_cache_control

__all__ = [
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "TTL_SECONDS",
    "Breakpoint",
    "CachePlan",
    "PromptCache",
    "Segment",
    "SimClock",
    "collect_breakpoints",
    "flatten",
]

MAX_BREAKPOINTS = 4
LOOKBACK = 20
TTL_SECONDS: Mapping[str, float] = {"5m": 300.0, "1h": 3600.0}

TTL_ORDER = (
    "{path}: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
    "Note that blocks are processed in the following order: `tools`, `system`, `messages`."
)
TOO_MANY = "A maximum of 4 blocks with cache_control may be provided. Found {found}."


class SimClock:
    """The cache's clock, in seconds.

    Manual by default: time stands still until :meth:`advance` moves it, so TTL tests are
    deterministic. With ``realtime=True`` it also follows the monotonic clock.

    Args:
        start: the time it starts at, in seconds.
        realtime: also follow the monotonic clock, not only :meth:`advance`.
    """

    def __init__(self, start: float = 0.0, *, realtime: bool = False) -> None:
        self._lock = threading.Lock()
        self._offset = start
        self._realtime = realtime
        self._base = time.monotonic()

    def now(self) -> float:
        """The current time in seconds."""
        with self._lock:
            elapsed = time.monotonic() - self._base if self._realtime else 0.0
            return self._offset + elapsed

    def advance(self, seconds: float) -> None:
        """Move the clock forward.

        Args:
            seconds: how far to move it (not negative).
        """
        if seconds < 0:
            raise ValueError("a clock only moves forward")
        with self._lock:
            self._offset += seconds


@dataclass(frozen=True, slots=True)
class Segment:
    """One prompt block with its token count and prefix key."""

    block: Block
    tokens: int
    key: bytes


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A cache breakpoint: a position in the flattened prompt and its TTL."""

    position: int
    ttl: str
    path: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CachePlan:
    """What one request reads and writes."""

    total_tokens: int
    read_tokens: int = 0
    creation_5m: int = 0
    creation_1h: int = 0
    hit: bytes | None = None
    writes: tuple[tuple[bytes, str], ...] = ()

    @property
    def creation_tokens(self) -> int:
        return self.creation_5m + self.creation_1h

    @property
    def input_tokens(self) -> int:
        return self.total_tokens - self.read_tokens - self.creation_tokens


def _step(state: bytes, tag: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(state + b"\x00" + tag + b"\x00" + payload).digest()


def _images(blocks: Sequence[Block]) -> int:
    count = 0
    for block in blocks:
        if block.type == "image":
            count += 1
        elif block.type == "tool_result":
            for inner in as_list(block.data.get("content")) or []:
                inner_block = as_dict(inner)
                if inner_block is not None and inner_block.get("type") == "image":
                    count += 1
    return count


def _citations_on(blocks: Sequence[Block]) -> bool:
    for block in blocks:
        citations = as_dict(block.data.get("citations"))
        if block.type == "document" and citations is not None and citations.get("enabled"):
            return True
    return False


def flatten(request: ParsedRequest) -> tuple[Segment, ...]:
    """The prompt in prefix order, each block with its tokens and prefix key."""
    message_blocks = [b for turn in request.turns for b in turn.blocks]
    segments: list[Segment] = []

    def add(state: bytes, block: Block) -> bytes:
        data = strip_cache_control(block.data)
        state = _step(state, block.tier.encode(), canonical(data))
        segments.append(Segment(block, block_tokens(data), state))
        return state

    state = _step(b"", b"model", canonical(request.model))
    for block in request.tools:
        state = add(state, block)
    system_tier: dict[str, Any] = {
        "speed": request.body.get("speed"),
        "citations": _citations_on(message_blocks),
    }
    state = _step(state, b"system-tier", canonical(system_tier))
    for block in request.system:
        state = add(state, block)
    messages_tier: dict[str, Any] = {
        "tool_choice": request.tool_choice or {"type": "auto"},
        "thinking": request.thinking or {"type": "disabled"},
        "images": _images(message_blocks),
    }
    state = _step(state, b"messages-tier", canonical(messages_tier))
    for turn in request.turns:
        state = _step(state, b"role", turn.role.encode())
        for block in turn.blocks:
            state = add(state, block)
    return tuple(segments)


def _markers(block: Block) -> list[tuple[str, Mapping[str, Any]]]:
    markers: list[tuple[str, Mapping[str, Any]]] = []
    if block.type == "tool_result":
        for i, inner in enumerate(as_list(block.data.get("content")) or []):
            inner_block = as_dict(inner)
            marker = as_dict(inner_block.get("cache_control")) if inner_block else None
            if marker is not None:
                markers.append((f"{block.path}.content.{i}.cache_control", marker))
    if block.cache_control is not None:
        markers.append((f"{block.path}.cache_control", block.cache_control))
    return markers


def _auto_position(segments: Sequence[Segment]) -> int | None:
    for i in range(len(segments) - 1, -1, -1):
        block = segments[i].block
        if block.type in ("thinking", "redacted_thinking"):
            continue
        if block.type == "text" and not block.data.get("text"):
            continue
        return i
    return None


def collect_breakpoints(
    request: ParsedRequest, segments: Sequence[Segment]
) -> tuple[Breakpoint, ...]:
    """The request's breakpoints in prefix order; 400 on more than four or a 1h after a 5m."""
    found: list[Breakpoint] = []
    for i, segment in enumerate(segments):
        for path, marker in _markers(segment.block):
            found.append(Breakpoint(i, str(marker.get("ttl", "5m")), path))
    if len(found) > MAX_BREAKPOINTS:
        raise invalid_request(TOO_MANY.format(found=len(found)))
    auto = as_dict(request.body.get("cache_control"))
    position = _auto_position(segments) if auto is not None else None
    if auto is not None and position is not None:
        ttl = str(auto.get("ttl", "5m"))
        same_place = [bp for bp in found if bp.position == position]
        if same_place:
            if any(bp.ttl != ttl for bp in same_place):
                raise invalid_request(
                    f"cache_control: the automatic cache breakpoint (ttl='{ttl}') conflicts with "
                    f"{same_place[0].path} (ttl='{same_place[0].ttl}')."
                )
        elif len(found) >= MAX_BREAKPOINTS:
            raise invalid_request(TOO_MANY.format(found=len(found) + 1))
        else:
            found.append(Breakpoint(position, ttl, "cache_control"))
            found.sort(key=lambda bp: bp.position)
    seen_5m = False
    for bp in found:
        if bp.ttl == "5m":
            seen_5m = True
        elif seen_5m:
            raise invalid_request(TTL_ORDER.format(path=f"{bp.path}.ttl"))
    return tuple(found)


@dataclass(slots=True)
class _Entry:
    expires_at: float
    ttl: str


class PromptCache:
    """Live cache entries keyed by prefix hash, shared by every request to one simulator."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[bytes, _Entry] = {}

    def __len__(self) -> int:
        now = self.clock.now()
        with self._lock:
            return sum(1 for e in self._entries.values() if e.expires_at > now)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def _live(self, key: bytes, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.expires_at > now

    def plan(
        self, segments: Sequence[Segment], breakpoints: Sequence[Breakpoint], minimum: int
    ) -> CachePlan:
        """Reads and writes for a request, without changing the cache."""
        cumulative: list[int] = []
        running = 0
        for segment in segments:
            running += segment.tokens
            cumulative.append(running)
        ttl_at: dict[int, str] = {}
        for bp in breakpoints:
            # A 1h marker and a 5m one on the same block (nested): the longer one wins.
            if ttl_at.get(bp.position) != "1h":
                ttl_at[bp.position] = bp.ttl
        positions = sorted(ttl_at)
        now = self.clock.now()
        hit = -1
        with self._lock:
            for b in positions:
                for p in range(b, max(-1, b - LOOKBACK), -1):
                    if self._live(segments[p].key, now):
                        hit = max(hit, p)
                        break
        read = cumulative[hit] if hit >= 0 else 0
        creation = {"5m": 0, "1h": 0}
        writes: list[tuple[bytes, str]] = []
        previous = read
        for b in positions:
            if b <= hit or cumulative[b] < minimum:
                continue
            creation[ttl_at[b]] += cumulative[b] - previous
            writes.append((segments[b].key, ttl_at[b]))
            previous = cumulative[b]
        return CachePlan(
            total_tokens=running,
            read_tokens=read,
            creation_5m=creation["5m"],
            creation_1h=creation["1h"],
            hit=segments[hit].key if hit >= 0 else None,
            writes=tuple(writes),
        )

    def commit(self, plan: CachePlan) -> None:
        """Refresh the hit's TTL and publish the plan's writes (the response has started)."""
        now = self.clock.now()
        with self._lock:
            if plan.hit is not None:
                entry = self._entries.get(plan.hit)
                if entry is not None and entry.expires_at > now:
                    entry.expires_at = max(entry.expires_at, now + TTL_SECONDS[entry.ttl])
            for key, ttl in plan.writes:
                expires_at = now + TTL_SECONDS[ttl]
                entry = self._entries.get(key)
                if entry is None or entry.expires_at <= now or entry.expires_at < expires_at:
                    self._entries[key] = _Entry(expires_at, ttl)
            for key in [k for k, e in self._entries.items() if e.expires_at <= now]:
                del self._entries[key]
