"""Conversation rules the API enforces, with the exact messages of wire-apis.md A7 and A8.

Runs after parsing (``_request``), in this order, first failure wins (sim choice):

1. roles, only in strict mode (the older alternation errors);
2. cache pre-warm (``max_tokens: 0``) combinations;
3. thinking and sampling rules (adaptive-only models, forced tool choice, temperature,
   ``budget_tokens`` vs ``max_tokens``);
4. tool pairing: every ``tool_use`` answered in the next message, no orphan ``tool_result``;
5. with ``enabled`` thinking, the assistant turn before the last tool results starts with a
   thinking block;
6. thinking blocks the simulator issued are echoed byte-identical.

Breakpoint count and TTL order are checked with the cache plan (``_cache``).
"""

from __future__ import annotations

from collections.abc import Callable

from dive.testing.anthropic._errors import invalid_request
from dive.testing.anthropic._models import (
    adaptive_only,
    rejects_disabled_thinking,
    rejects_temperature,
)
from dive.testing.anthropic._request import Block, ParsedRequest, Turn, as_dict

__all__ = ["validate"]

INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"

BUDGET_TOO_LARGE = (
    "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
    "at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    "#max-tokens-and-context-window-size"
)
TEMPERATURE_WITH_THINKING = (
    "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation "
    "at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking"
    "#important-considerations-when-using-extended-thinking"
)
TEMPERATURE_DEPRECATED = "`temperature` is deprecated for this model."
FORCED_TOOL_WITH_THINKING = "Thinking may not be enabled when tool_choice forces tool use."
ENABLED_NOT_SUPPORTED = (
    '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)
DISABLED_NOT_SUPPORTED = (
    '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and '
    '"output_config.effort" to control thinking behavior.'
)
THINKING_FIRST = (
    "Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, "
    "a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous "
    "turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
THINKING_MODIFIED = (
    "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. "
    "These blocks must remain as they were in the original response."
)
UNANSWERED_TOOL_USE = (
    "messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
ORPHAN_TOOL_RESULT = (
    "{path}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` "
    "block must have a corresponding `tool_use` block in the previous message."
)


def validate(
    request: ParsedRequest,
    *,
    issued_thinking: Callable[[str], str | None],
    strict_roles: bool = False,
) -> None:
    """Raise a 400 :class:`~dive.testing.anthropic._errors.APIErrorAnswer` on the first broken rule.

    ``issued_thinking`` maps a signature the simulator issued to the exact thinking text it
    was issued with (None for signatures it never issued).
    """
    if strict_roles:
        _check_roles(request.turns)
    if request.max_tokens == 0:
        _check_prewarm(request)
    _check_thinking(request)
    _check_tool_pairing(request.turns)
    if request.thinking_type == "enabled":
        _check_thinking_first(request.turns)
    _check_thinking_unmodified(request.turns, issued_thinking)


def _check_roles(turns: tuple[Turn, ...]) -> None:
    if turns[0].role != "user":
        raise invalid_request('messages: first message must use the "user" role')
    for turn in turns:
        if len(turn.message_indexes) > 1:
            raise invalid_request(
                'messages: roles must alternate between "user" and "assistant", but found '
                f'multiple "{turn.role}" roles in a row'
            )


def _check_prewarm(request: ParsedRequest) -> None:
    prefix = "`max_tokens: 0` (cache pre-warm) cannot be combined with"
    if request.stream:
        raise invalid_request(f"{prefix} `stream: true`.")
    if request.thinking_on:
        raise invalid_request(f"{prefix} thinking.")
    if request.forced_tool_choice:
        raise invalid_request(f"{prefix} a forced `tool_choice`.")
    output_config = as_dict(request.body.get("output_config"))
    if output_config is not None and output_config.get("format") is not None:
        raise invalid_request(f"{prefix} `output_config.format`.")


def _check_thinking(request: ParsedRequest) -> None:
    kind = request.thinking_type
    if kind == "enabled" and adaptive_only(request.model):
        raise invalid_request(ENABLED_NOT_SUPPORTED)
    if (
        request.thinking is not None
        and kind == "disabled"
        and rejects_disabled_thinking(request.model)
    ):
        raise invalid_request(DISABLED_NOT_SUPPORTED)
    if request.temperature is not None and rejects_temperature(request.model):
        raise invalid_request(TEMPERATURE_DEPRECATED)
    if not request.thinking_on:
        return
    if request.forced_tool_choice:
        raise invalid_request(FORCED_TOOL_WITH_THINKING)
    if request.temperature is not None and request.temperature != 1:
        raise invalid_request(TEMPERATURE_WITH_THINKING)
    if kind == "enabled" and request.max_tokens and request.thinking is not None:
        budget = int(request.thinking["budget_tokens"])
        if budget >= request.max_tokens and INTERLEAVED_THINKING_BETA not in request.betas:
            raise invalid_request(BUDGET_TOO_LARGE)


def _tool_uses(turn: Turn) -> list[Block]:
    return [b for b in turn.blocks if b.type == "tool_use"]


def _tool_results(turn: Turn) -> list[Block]:
    return [b for b in turn.blocks if b.type == "tool_result"]


def _check_tool_pairing(turns: tuple[Turn, ...]) -> None:
    for g, turn in enumerate(turns):
        if turn.role == "assistant":
            uses = _tool_uses(turn)
            following = turns[g + 1] if g + 1 < len(turns) else None
            answered: set[str] = set()
            if following is not None and following.role == "user":
                answered = {str(b.data["tool_use_id"]) for b in _tool_results(following)}
            missing = [b for b in uses if b.data["id"] not in answered]
            if missing:
                ids = ", ".join(str(b.data["id"]) for b in missing)
                raise invalid_request(
                    UNANSWERED_TOOL_USE.format(n=missing[0].message_index, ids=ids)
                )
        elif turn.role == "user":
            previous = turns[g - 1] if g > 0 else None
            known: set[str] = set()
            if previous is not None and previous.role == "assistant":
                known = {str(b.data["id"]) for b in _tool_uses(previous)}
            for block in _tool_results(turn):
                if block.data["tool_use_id"] not in known:
                    raise invalid_request(
                        ORPHAN_TOOL_RESULT.format(path=block.path, id=block.data["tool_use_id"])
                    )


def _check_thinking_first(turns: tuple[Turn, ...]) -> None:
    if len(turns) < 2:
        return
    last, previous = turns[-1], turns[-2]
    if last.role != "user" or previous.role != "assistant" or not _tool_results(last):
        return
    if not previous.blocks:
        return
    first = previous.blocks[0]
    if first.type not in ("thinking", "redacted_thinking"):
        raise invalid_request(f"{first.path}.type: " + THINKING_FIRST.format(found=first.type))


def _check_thinking_unmodified(
    turns: tuple[Turn, ...], issued_thinking: Callable[[str], str | None]
) -> None:
    for turn in turns:
        if turn.role != "assistant":
            continue
        for block in turn.blocks:
            if block.type != "thinking":
                continue
            issued = issued_thinking(str(block.data["signature"]))
            if issued is not None and issued != block.data["thinking"]:
                raise invalid_request(f"{block.path}: {THINKING_MODIFIED}")
