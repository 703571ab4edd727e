"""``ExecutorOptions``: every executor option, checked together when it is built.

Field and cross-field checks run in ``__post_init__`` (so the order options are given in
never matters); checks that depend on the model run in ``Executor``'s constructor.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from dive.executor._errors import ExecutorConfigError
from dive.providers import RetryPolicy

__all__ = ["EFFORTS", "PROVIDER_LABELS", "Effort", "ExecutorOptions"]

Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORTS: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
PROVIDER_LABELS = ("anthropic", "gcp.vertex_ai", "aws.bedrock", "openai", "azure.ai.openai")
MAX_TOKENS_LIMIT = 128_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorOptions:
    """How an ``Executor`` runs. Invalid values raise ``ExecutorConfigError``.

    Attributes:
        model: the model id when the executor is given a provider name (``"anthropic"``).
        max_tokens: output tokens per model call, 1…128,000.
        temperature: sampling temperature (None sends 0.1 where the model samples).
        thinking_budget: extended-thinking budget (≥ 1,024 and below ``max_tokens``); None off.
        effort: ``low`` … ``max`` (clamped or dropped where the model has no such level).
        max_rounds: model round-trips before ``MaxRoundsExceeded`` (seeds are free).
        tool_call_concurrency: tool handlers in flight per round (1: sequential).
        max_tool_calls_before_finalize: after this many investigative calls, nudge the model
            to submit (0: never).
        force_submit_tool_choice: force the submit tool on the first round (not with thinking).
        force_submit_defer_until: a gate tool: forcing waits until it has been called.
        retry: the provider layer's retry policy for model calls; None: the model's own
            (``RetryPolicy()`` for a model built from a string).
        caching: prompt-cache markers (Anthropic; other providers cache on their own).
        cache_ttl: ``"5m"`` or ``"1h"``.
        cache_first_user_block: also mark the first user block (the rendered prompt).
        provider_label: the provider name for telemetry (derived from the model if None).
        resource_labels: extra telemetry attributes.
        capture_payloads: keep prompts, responses and reasoning in traces.
    """

    model: str | None = None
    max_tokens: int = 8192
    temperature: float | None = None
    thinking_budget: int | None = None
    effort: Effort | None = None
    max_rounds: int = 200
    tool_call_concurrency: int = 10
    max_tool_calls_before_finalize: int = 0
    force_submit_tool_choice: bool = False
    force_submit_defer_until: str | None = None
    retry: RetryPolicy | None = None
    caching: bool = True
    cache_ttl: Literal["5m", "1h"] = "5m"
    cache_first_user_block: bool = False
    provider_label: str | None = None
    resource_labels: Mapping[str, str] | None = None
    capture_payloads: bool = False

    def __post_init__(self) -> None:
        for problem in _problems(self):
            raise ExecutorConfigError(problem)


def _problems(o: ExecutorOptions) -> list[str]:
    out: list[str] = []
    if o.model is not None and not o.model.strip():
        out.append("model must not be empty")
    if not 1 <= o.max_tokens <= MAX_TOKENS_LIMIT:
        out.append(
            f"max tokens {o.max_tokens} exceeds maximum of {MAX_TOKENS_LIMIT}"
            if o.max_tokens > MAX_TOKENS_LIMIT
            else f"max tokens must be positive, got {o.max_tokens}"
        )
    if o.temperature is not None and not 0.0 <= o.temperature <= 2.0:
        out.append(f"temperature must be between 0.0 and 2.0, got {o.temperature}")
    if o.thinking_budget is not None:
        if o.thinking_budget < 1024:
            out.append(f"thinking budget must be at least 1024, got {o.thinking_budget}")
        elif o.thinking_budget >= o.max_tokens:
            out.append(
                f"thinking budget {o.thinking_budget} must be less than max tokens {o.max_tokens}"
            )
    if o.effort is not None and o.effort not in EFFORTS:
        out.append(f"effort must be one of {', '.join(EFFORTS)}, got {o.effort!r}")
    if o.max_rounds < 1:
        out.append(f"max rounds must be positive, got {o.max_rounds}")
    if o.tool_call_concurrency < 1:
        out.append(f"tool call concurrency must be positive, got {o.tool_call_concurrency}")
    if o.max_tool_calls_before_finalize < 0:
        out.append(
            "max tool calls before finalize must not be negative, got "
            f"{o.max_tool_calls_before_finalize}"
        )
    if o.force_submit_tool_choice and o.thinking_budget is not None:
        out.append("force_submit_tool_choice is incompatible with thinking")
    if o.cache_ttl not in ("5m", "1h"):
        out.append(f"cache ttl must be '5m' or '1h', got {o.cache_ttl!r}")
    if o.provider_label is not None and o.provider_label not in PROVIDER_LABELS:
        out.append(f"unknown provider label {o.provider_label!r}")
    return out


def resource_labels(given: Mapping[str, str] | None) -> dict[str, str] | None:
    """The telemetry labels: None when not asked for; else the defaults, then ``given``.

    Defaults: ``service_name`` from ``OTEL_SERVICE_NAME``, ``K_SERVICE`` or ``CLOUD_RUN_JOB``,
    ``product`` from ``DIVE_PRODUCT``, ``team`` from ``DIVE_TEAM`` (each ``"unknown"`` unset).
    """
    if given is None:
        return None
    env = os.environ
    service = env.get("OTEL_SERVICE_NAME") or env.get("K_SERVICE") or env.get("CLOUD_RUN_JOB")
    out = {
        "service_name": service or "unknown",
        "product": env.get("DIVE_PRODUCT") or "unknown",
        "team": env.get("DIVE_TEAM") or "unknown",
    }
    out.update(given)
    return out
