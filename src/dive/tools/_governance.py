"""``Governance``: the options every tool origin shares, as one type.

``@tool``, ``FunctionTool``, ``FunctionTool.from_function``, ``TypedTool.governance`` and
the toolkit's tools all take these same keywords (``Unpack[Governance]``: a misspelt one is a
type error, and at run time a ``TypeError``); they become the fields of the tool's
``ToolDefinition``, which is all the loop reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from typing_extensions import TypedDict

from dive.messages import CacheControl, EffectType, RiskLevel, ToolRetryPolicy

__all__ = ["Governance", "governance_fields"]


class Governance(TypedDict, total=False):
    """How the loop governs a tool's calls (every key optional).

    Attributes:
        timeout: seconds each attempt may run; then it is cancelled and answered as timed
            out, recorded ``unknown`` unless the tool is read-only; None: no limit.
        retry_policy: retries of a failed call; needs ``idempotent=True`` or
            ``effect_type="read_only"`` when it allows more than one attempt.
        requires_approval: the default approval policy asks before each call runs.
        required_permissions: permissions the agent's ``granted_permissions`` must hold for
            a call to run.
        risk_level: ``low``, ``medium``, ``high`` or ``critical`` (None counts as medium).
        effect_type: ``read_only``, ``write`` or ``external_side_effect``; None takes the one
            the annotations imply.
        idempotent: a repeated call is harmless; None takes ``annotations.idempotent``.
        terminal: the turn completes once the batch holding a call to it finishes.
        sequential_only: a batch holding a call to it runs one call at a time (also set by
            the annotation).
        halts_batch: a failed call stops the calls after it in its batch (also set by the
            annotation).
        tags: free-form labels, recorded with each call.
        metadata: string key/values carried on the definition.
        origin: where the tool comes from (``local`` for a function).
        cache_control: a prompt-cache breakpoint on the tool definition.
    """

    timeout: float | None
    retry_policy: ToolRetryPolicy | None
    requires_approval: bool
    required_permissions: Iterable[str]
    risk_level: RiskLevel | None
    effect_type: EffectType | None
    idempotent: bool | None
    terminal: bool
    sequential_only: bool
    halts_batch: bool
    tags: Iterable[str]
    metadata: Mapping[str, str] | None
    origin: str
    cache_control: CacheControl | None


_KEYS = frozenset(Governance.__optional_keys__)
_UNSET_WHEN_NONE = ("idempotent", "metadata")  # None means "not given": the defaults apply


def governance_fields(options: Mapping[str, Any], where: str) -> Governance:
    """``options`` checked against :class:`Governance` (``where`` names the caller).

    Raises:
        TypeError: a key that is not a governance option.
    """
    unknown = options.keys() - _KEYS
    if unknown:
        raise TypeError(f"{where} got an unexpected keyword argument {min(unknown)!r}")
    fields: dict[str, Any] = dict(options)
    for key in _UNSET_WHEN_NONE:
        if key in fields and fields[key] is None:
            del fields[key]
    return cast(Governance, fields)
