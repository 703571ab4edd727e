"""The submit tool: its schema (``reasoning`` + the response), checks, validators, commit.

A submission is checked in a fixed order (arguments an object, ``reasoning`` a string, the
payload present, a JSON-encoded payload string decoded leniently, an object, then pydantic
validation); the first failure is a rejection the model sees as an ``is_error`` result.
An accepted response goes through the validators — the built-in schema validator first,
then the caller's, all concurrently — and their findings, concatenated in registration
order, are sent back. No findings: the response is committed (even an all-default one).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import jsonschema
from pydantic import BaseModel, ValidationError

from dive.executor._errors import ExecutorConfigError, ResultValidationError
from dive.executor._trace import ExecutionTrace

__all__ = [
    "DEFAULT_SUBMIT_DESCRIPTION",
    "Finding",
    "ResultValidator",
    "SubmissionContext",
    "SubmitTool",
    "check_submission",
    "payload_schema",
    "run_validators",
    "submit_schema",
]

ResponseT = TypeVar("ResponseT", bound=BaseModel)
log = logging.getLogger("dive.executor")

DEFAULT_SUBMIT_DESCRIPTION = (
    "Submit your final result. This tool is terminal: call it exactly once, with the complete "
    "result, when you are done. Never call it with placeholder, partial or probe content."
)
REASONING = "Explain why you are confident this result is complete and accurate."


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmitTool:
    """How the submit tool is named and described (``ResponseT.__submit_tool__`` for defaults).

    Attributes:
        name: the tool name.
        description: what the model is told the tool is for.
        success_message: the result the committing call gets.
        payload_field: the property holding the response.
        payload_description: the payload property's description.
        omit_payload_fields: response fields left out of the schema (they must have defaults).
    """

    name: str = "submit_result"
    description: str = DEFAULT_SUBMIT_DESCRIPTION
    success_message: str = "Result submitted successfully."
    payload_field: str = "result"
    payload_description: str = "Structured result payload."
    omit_payload_fields: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One problem a validator found; sent back to the model.

    Attributes:
        kind: the kind of problem (``review``, ``schema``, ...).
        identifier: a stable id for it (the model sees it; ``schema:<path>`` for schema findings).
        details: what is wrong and what to do, for the model.
        name: a short name, if any.
        details_url: a link with more, if any.
    """

    kind: str
    identifier: str
    details: str
    name: str | None = None
    details_url: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "identifier": self.identifier}
        if self.name is not None:
            out["name"] = self.name
        out["details"] = self.details
        out["details_url"] = self.details_url
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionContext:
    """What a result validator sees besides the response.

    Attributes:
        reasoning: the reasoning the model submitted with the response.
        tool_call_id: the submit call's id.
        round: the model round of the submission, from 0.
        trace: the execution's trace so far.
    """

    reasoning: str
    tool_call_id: str
    round: int
    trace: ExecutionTrace = field(repr=False)


ResultValidator = Callable[
    [ResponseT, SubmissionContext], Awaitable[Sequence[Finding]] | Sequence[Finding]
]


# --- schema ---------------------------------------------------------------------------------


def _inline(node: Any, defs: Mapping[str, Any], stack: tuple[str, ...], keep: set[str]) -> Any:
    if isinstance(node, dict):
        d = cast(dict[str, Any], node)
        ref = d.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in stack:  # recursive: keep the reference
                keep.add(name)
                return d
            rest = {k: v for k, v in d.items() if k != "$ref"}
            inlined = _inline(defs[name], defs, (*stack, name), keep)
            return {**inlined, **rest} if rest else inlined
        return {k: _inline(v, defs, stack, keep) for k, v in d.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline(v, defs, stack, keep) for v in cast(list[Any], node)]
    return node


def payload_schema(response_type: type[BaseModel], omit: Sequence[str] = ()) -> dict[str, Any]:
    """The response's JSON schema, local ``$ref``s inlined, ``omit`` fields removed.

    Recursive models keep their ``$defs``, hoisted to the root.
    """
    raw = response_type.model_json_schema()
    defs = cast(dict[str, Any], raw.get("$defs", {}))
    keep: set[str] = set()
    schema = cast(dict[str, Any], _inline(raw, defs, (), keep))
    if keep:
        schema["$defs"] = {k: _inline(defs[k], defs, (k,), keep) for k in sorted(keep)}
    props = cast(dict[str, Any], schema.setdefault("properties", {}))
    fields = response_type.model_fields
    for name in omit:
        if name not in props:
            raise ExecutorConfigError(
                f"omit_payload_fields: {response_type.__name__} has no field {name!r}"
            )
        if fields[name].is_required():
            raise ExecutorConfigError(
                f"omit_payload_fields: {response_type.__name__}.{name} has no default, so "
                "the model could never submit a valid result without it"
            )
        del props[name]
        if "required" in schema:
            schema["required"] = [r for r in schema["required"] if r != name]
    return schema


def submit_schema(response_type: type[BaseModel], cfg: SubmitTool) -> dict[str, Any]:
    """The submit tool's input schema: ``reasoning`` and the payload, both required."""
    payload = payload_schema(response_type, cfg.omit_payload_fields)
    defs = payload.pop("$defs", None)
    payload.pop("title", None)
    payload["description"] = cfg.payload_description
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "description": REASONING},
            cfg.payload_field: payload,
        },
        "required": ["reasoning", cfg.payload_field],
    }
    if defs:
        schema["$defs"] = defs
    return schema


# --- a submission ---------------------------------------------------------------------------


def _lenient(text: str) -> dict[str, Any] | None:
    """A JSON object encoded into a string, decoded; None when it is not one."""
    candidate = text.strip()
    if not candidate.startswith("{"):
        return None
    while candidate:
        try:
            value = json.loads(candidate)
        except ValueError:
            if candidate[-1] in "}] \t\r\n":
                candidate = candidate[:-1]
                continue
            return None
        return cast(dict[str, Any], value) if isinstance(value, dict) else None
    return None


def check_submission(
    arguments: Any, response_type: type[ResponseT], cfg: SubmitTool
) -> tuple[ResponseT | None, str, str | None]:
    """``(response, reasoning, None)`` or ``(None, reasoning, rejection text)``."""
    if not isinstance(arguments, Mapping):
        return None, "", f"Failed to parse tool input: expected a JSON object, got {arguments!r}"
    args = cast(Mapping[str, Any], arguments)
    reasoning = args.get("reasoning")
    if not isinstance(reasoning, str):
        return None, "", '"reasoning" is required and must be a string'
    if cfg.payload_field not in args:
        return None, reasoning, f'"{cfg.payload_field}" is required'
    payload = args[cfg.payload_field]
    if isinstance(payload, str):
        decoded = _lenient(payload)
        if decoded is None:
            return (
                None,
                reasoning,
                (
                    f'"{cfg.payload_field}" must be a JSON object, not a string. It looks like you '
                    "JSON-encoded the object into a string; pass the object itself."
                ),
            )
        log.warning("submit %s: decoded a JSON-encoded %r payload", cfg.name, cfg.payload_field)
        payload = decoded
    if not isinstance(payload, Mapping):
        kind = type(payload).__name__
        return None, reasoning, f'"{cfg.payload_field}" must be a JSON object, got {kind}'
    try:
        return response_type.model_validate(dict(cast(Mapping[str, Any], payload))), reasoning, None
    except ValidationError as exc:
        parts = [
            f"{'.'.join(str(p) for p in e['loc']) or 'result'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
        return None, reasoning, "failed to validate payload: " + "; ".join(parts)


# --- validators -----------------------------------------------------------------------------


def schema_findings(
    response: BaseModel, schema: Mapping[str, Any], omit: Sequence[str] = ()
) -> list[Finding]:
    """The built-in validator: the dumped response against the payload schema.

    ``required`` is ignored; one finding per violation. It catches schema constraints
    pydantic does not enforce.
    """
    relaxed = _without_required(dict(schema))
    validator: Any = jsonschema.Draft202012Validator(relaxed)
    data = response.model_dump(mode="json", by_alias=True, exclude=set(omit))
    for name in type(response).model_computed_fields:  # not part of the input schema
        data.pop(name, None)
    errors: list[Any] = list(validator.iter_errors(data))
    out: list[Finding] = []
    for err in sorted(errors, key=str):
        path = "/".join(str(p) for p in err.absolute_path)
        ident = f"schema:{path}" if path else "schema"
        message = err.message
        if err.validator == "enum":
            message = f"{message} (allowed values: {err.validator_value})"
        out.append(
            Finding(
                kind="review",
                identifier=ident,
                name=ident,
                details="the submitted result does not conform to its declared schema — "
                f"{path or '(root)'}: {message}",
            )
        )
    return out


def _without_required(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _without_required(v)
            for k, v in cast(dict[str, Any], node).items()
            if k != "required"
        }
    if isinstance(node, list):
        return [_without_required(v) for v in cast(list[Any], node)]
    return node


async def run_validators(
    response: ResponseT,
    ctx: SubmissionContext,
    schema: Mapping[str, Any],
    validators: Sequence[ResultValidator[ResponseT]],
    omit: Sequence[str] = (),
) -> list[Finding]:
    """Every validator at once; findings in registration order (the schema's first).

    A validator that raises cancels the others and raises ``ResultValidationError``.
    """

    async def one(fn: ResultValidator[ResponseT]) -> Sequence[Finding]:
        out = fn(response, ctx)
        if inspect.isawaitable(out):
            out = await out
        return out

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(v)) for v in validators]
    except* Exception as eg:
        first = eg.exceptions[0]
        raise ResultValidationError(f"result validation: {first}", trace=ctx.trace) from first
    findings = schema_findings(response, schema, omit)
    for task in tasks:
        findings.extend(task.result())
    return findings
