"""Timeouts and retries of the activities, from the tool's governance and the loop's rules.

- A tool activity is retried by Temporal only when the tool is idempotent or read-only, and
  then even without a ``retry_policy``: a lost worker is not a tool failure. A tool's own
  ``retry_policy`` (its exceptions, its timeouts) runs inside the activity, exactly as in
  process, so the two layers never multiply a failing tool's attempts.
- A model activity is retried only for a lost worker: the provider's own retries run inside
  the activity, in the retry window (the SDK's retries are off), and a provider failure
  comes back as data, never as an activity failure.
- A store activity is retried (a write is idempotent on retry: see the store activity).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import RetryPolicy

from dive.messages import ToolDefinition

__all__ = ["LOST_WORKER_ATTEMPTS", "MODEL_RETRY", "STORE_RETRY", "tool_retry", "tool_timeout"]

LOST_WORKER_ATTEMPTS = 3
"""Attempts of an activity a repeat cannot harm, when its workers keep being lost."""

MODEL_RETRY = RetryPolicy(
    maximum_attempts=LOST_WORKER_ATTEMPTS, initial_interval=timedelta(seconds=1)
)
STORE_RETRY = RetryPolicy(maximum_attempts=5, initial_interval=timedelta(milliseconds=200))

_NO_TIMEOUT = timedelta(days=1)


def tool_retry(d: ToolDefinition) -> RetryPolicy:
    """Temporal's retries of one tool call's activity."""
    if not (d.idempotent or d.read_only):
        return RetryPolicy(maximum_attempts=1)
    return RetryPolicy(maximum_attempts=LOST_WORKER_ATTEMPTS, initial_interval=timedelta(seconds=1))


def tool_timeout(d: ToolDefinition, heartbeat: timedelta) -> timedelta:
    """One attempt's start-to-close timeout: every in-activity attempt, backoffs and slack.

    A tool without a timeout gets a day: its heartbeats, not this, notice a dead worker.
    """
    if d.timeout is None:
        return _NO_TIMEOUT
    policy = d.retry_policy
    attempts = policy.max_attempts if policy is not None and (d.idempotent or d.read_only) else 1
    backoff = sum(policy.delay(k) * 1.1 for k in range(attempts)) if policy is not None else 0.0
    return timedelta(seconds=d.timeout * attempts + backoff) + heartbeat + timedelta(seconds=5)
