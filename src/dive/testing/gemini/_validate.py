"""Conversation rules the API enforces, checked after parsing (``_request``).

In this order, first failure wins (sim choice):

1. a ``functionCall`` turn (a model content with calls) comes right after a user content
   (a user turn or a function response turn)::

       Please ensure that function call turn comes immediately after a user turn or after a
       function response turn.

2. a function response turn (a user content with ``functionResponse`` parts) comes right
   after a function call turn, answers as many calls as it made, and each response matches a
   call of that turn (by ``id`` when both sides have ids, else by ``name``)::

       Please ensure that function response turn comes immediately after a function call turn.
       Please ensure that the number of function response parts is equal to the number of
       function call parts of the function call turn.
       functionResponse `NAME` at contents[I].parts[J] matches no functionCall of the function
       call turn at contents[K].                                   (sim choice)

3. thought signatures (unless the simulator was built with ``check_signatures=False``):

   - a ``thoughtSignature`` on a model part must be one this simulator served (compared by
     decoded bytes, so the SDK's URL-safe re-encoding is fine) or one of the documented
     dummies ``skip_thought_signature_validator`` / ``context_engineering_is_the_way_to_go``,
     else ``Corrupted thought signature.`` (the API's message);
   - in the current turn (the contents after the last user content that is not only function
     responses), a function call the simulator served with a signature must be replayed with
     it (of parallel calls only the first carries one). The message is a sim choice modelled
     on the API's::

       Function call is missing a thought_signature in functionCall parts. This is required
       for tools to work correctly, and missing thought_signature may lead to degraded model
       performance. Additional data, function call `default_api:NAME` , position N. Please
       refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.

     where N is the 1-based position of the model content in ``contents``.

Calls the simulator never served (hand-built histories) are not checked for signatures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dive.testing.gemini._errors import invalid_argument
from dive.testing.gemini._render import BYPASS_SIGNATURES, Issuer, call_key, signature_bytes
from dive.testing.gemini._request import Content, ParsedRequest

__all__ = [
    "CORRUPTED_SIGNATURE",
    "FUNCTION_CALL_PLACEMENT",
    "FUNCTION_RESPONSE_COUNT",
    "FUNCTION_RESPONSE_PLACEMENT",
    "FUNCTION_RESPONSE_UNMATCHED",
    "MISSING_SIGNATURE",
    "validate",
]

FUNCTION_CALL_PLACEMENT = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
FUNCTION_RESPONSE_PLACEMENT = (
    "Please ensure that function response turn comes immediately after a function call turn."
)
FUNCTION_RESPONSE_COUNT = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
FUNCTION_RESPONSE_UNMATCHED = (
    "functionResponse `{name}` at contents[{i}].parts[{j}] matches no functionCall of the "
    "function call turn at contents[{k}]."
)
MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
CORRUPTED_SIGNATURE = "Corrupted thought signature."

_BYPASS_BYTES = frozenset(s.encode() for s in BYPASS_SIGNATURES)


def validate(request: ParsedRequest, *, issuer: Issuer, check_signatures: bool = True) -> None:
    """Raise a 400 :class:`~dive.testing.gemini._errors.APIErrorAnswer` on the first broken rule."""
    _check_turns(request.contents)
    if check_signatures:
        _check_corrupted(request.contents, issuer)
        _check_missing(request.contents, issuer)


def _check_turns(contents: tuple[Content, ...]) -> None:
    for n, content in enumerate(contents):
        previous = contents[n - 1] if n else None
        if (
            content.role == "model"
            and content.calls()
            and (previous is None or previous.role != "user")
        ):
            raise invalid_argument(FUNCTION_CALL_PLACEMENT)
        responses = content.responses() if content.role == "user" else []
        if not responses:
            continue
        calls = previous.calls() if previous is not None and previous.role == "model" else []
        if not calls:
            raise invalid_argument(FUNCTION_RESPONSE_PLACEMENT)
        if len(responses) != len(calls):
            raise invalid_argument(FUNCTION_RESPONSE_COUNT)
        assert previous is not None
        for j, response in responses:
            if not _matches(response, [c for _, c in calls]):
                raise invalid_argument(
                    FUNCTION_RESPONSE_UNMATCHED.format(
                        name=response.get("name"), i=content.index, j=j, k=previous.index
                    )
                )


def _matches(response: Mapping[str, Any], calls: list[Mapping[str, Any]]) -> bool:
    name = response.get("name")
    response_id = response.get("id")
    if response_id and any(c.get("id") for c in calls):
        return any(c.get("id") == response_id and c.get("name") == name for c in calls)
    return any(c.get("name") == name for c in calls)


def _bypass(signature: str) -> bool:
    return signature in BYPASS_SIGNATURES or signature_bytes(signature) in _BYPASS_BYTES


def _check_corrupted(contents: tuple[Content, ...], issuer: Issuer) -> None:
    for content in contents:
        if content.role != "model":
            continue
        for part in content.parts:
            signature = part.get("thoughtSignature")
            if signature is None:
                continue
            if not isinstance(signature, str) or not (
                _bypass(signature) or issuer.issued(signature)
            ):
                raise invalid_argument(CORRUPTED_SIGNATURE)


def _check_missing(contents: tuple[Content, ...], issuer: Issuer) -> None:
    start = 0
    for content in contents:
        if content.is_plain_user_turn:
            start = content.index + 1
    for content in contents[start:]:
        if content.role != "model":
            continue
        calls = content.calls()
        replayed = {call_key(call) for j, call in calls if content.parts[j].get("thoughtSignature")}
        for j, call in calls:
            if content.parts[j].get("thoughtSignature"):
                continue
            key = call_key(call)
            if issuer.signed_call(key) and key not in replayed:
                raise invalid_argument(
                    MISSING_SIGNATURE.format(name=call.get("name"), position=content.index + 1)
                )
