"""Typed output: ``Agent(output_type=T, output_mode=...)`` for any type pydantic validates.

``OutputSpec`` is built once per agent from ``output_type``. It knows the JSON schema (from
``pydantic.TypeAdapter``), how the model is asked for the value and how an answer is
validated:

- ``str`` (the default): the final text is the output; no schema.
- ``"tool"`` mode (default for other types): a terminal submit tool whose input is the
  value. Object types (models, dataclasses, TypedDicts) are the tool's input as they are;
  other types (``int``, ``list[X]``, ``Literal[...]``…) are wrapped as ``{"result": value}``.
  A union of object types gets one submit tool per member (``submit_result_<Name>``).
- ``"native"``: the provider's JSON-schema response format (``ModelSettings.response_schema``);
  the final text is parsed as JSON.
- ``"prompted"``: the schema goes into the system prompt and the JSON is taken from the final
  text (fences and surrounding prose tolerated), for servers with neither tools nor schemas.

Output validators run after the schema check, in order; each may return a replacement
value or raise ``ModelRetry(message)`` to send the message back to the model. Failed
attempts of any kind count against ``output_retries``.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, is_dataclass
from typing import Any, Literal, cast

from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from dive.agent._context import RunContext
from dive.agent._structured import OutputTool
from dive.errors import DiveError, UserError
from dive.tools import NoTitlesSchema

__all__ = [
    "ModelRetry",
    "OutputAttempts",
    "OutputMode",
    "OutputSpec",
    "OutputValidator",
    "extract_json",
]

OutputMode = Literal["tool", "native", "prompted"]
_MODES = ("tool", "native", "prompted")

OutputValidator = (
    Callable[[Any], Any | Awaitable[Any]] | Callable[[RunContext[Any], Any], Any | Awaitable[Any]]
)
"""``fn(output)`` or ``fn(ctx, output)``, sync or async; returns the output (maybe changed)."""


class ModelRetry(DiveError):
    """Raise from an output validator or a tool to ask the model to try again.

    The message is sent to the model. From an output validator, the attempt counts against
    ``output_retries``; from a tool, it is the call's result (not a failure, nothing logged
    above debug), and ``Limits.max_tool_retries`` bounds how often in a row one tool may ask.

    Args:
        message: what to tell the model.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _is_object_type(tp: object) -> bool:
    if not isinstance(tp, type):
        return False
    cls = cast(type[Any], tp)
    return issubclass(cls, BaseModel) or is_dataclass(cls) or bool(is_typeddict(cls))


def _union_members(tp: Any) -> tuple[Any, ...]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return ()


def _name_of(tp: Any) -> str:
    name = getattr(tp, "__name__", None) or "result"
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:40]


@dataclass(frozen=True, slots=True)
class _Target:
    """One way of submitting the output: a schema, how to unwrap it, its adapter."""

    name: str
    schema: dict[str, Any]
    wrapped: bool
    adapter: TypeAdapter[Any]

    def validate(self, data: Any) -> Any:
        """Validate submitted data (raises ``ValidationError`` or ``_Unwrapped``)."""
        data = _plain(data)
        if self.wrapped:
            if not isinstance(data, dict) or "result" not in data:
                raise _Unwrapped()
            data = cast(dict[str, Any], data)["result"]
        return self.adapter.validate_python(data)


def _plain(value: Any) -> Any:
    """Read-only mappings and tuples of tool arguments as plain dicts and lists."""
    if isinstance(value, Mapping):
        items = cast(Mapping[Any, Any], value).items()
        return {k: _plain(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in cast(Sequence[Any], value)]
    return value


class _Unwrapped(Exception):
    pass


def _target(tp: Any, name: str) -> _Target:
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
        schema = adapter.json_schema(schema_generator=NoTitlesSchema)
    except Exception as exc:
        raise UserError(
            f"output_type {tp!r} cannot be used: pydantic cannot build a schema for it ({exc})"
        ) from exc
    if _is_object_type(tp):
        schema.setdefault("properties", {})
        return _Target(name, schema, False, adapter)
    defs = schema.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
        "additionalProperties": False,
    }
    if defs is not None:
        wrapper["$defs"] = defs
    return _Target(name, wrapper, True, adapter)


def _validator_arity(fn: Callable[..., Any]) -> int:
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return 1
    if len(params) not in (1, 2):
        raise UserError(
            f"output validator {getattr(fn, '__name__', fn)!r} must take (output) or "
            f"(ctx, output), not {len(params)} parameters"
        )
    return len(params)


class OutputAttempts:
    """One invocation's structured output: the accepted value and the failed attempts.

    The loop's output checks change it (``accept``, ``count_failure``); the ending reads it.
    """

    __slots__ = ("_accepted", "_failures", "_value")

    def __init__(self) -> None:
        self._value: Any = None
        self._accepted = False
        self._failures = 0

    @property
    def value(self) -> Any:
        """The accepted output, if any."""
        return self._value

    @property
    def accepted(self) -> bool:
        """True once an output was accepted (it may itself be None, 0 or False)."""
        return self._accepted

    @property
    def failures(self) -> int:
        """Failed output attempts so far."""
        return self._failures

    def accept(self, value: Any) -> None:
        """Accept the output.

        Args:
            value: the validated output (``result.output``).
        """
        self._value = value
        self._accepted = True

    def count_failure(self) -> int:
        """Count a failed attempt; returns the count."""
        self._failures += 1
        return self._failures


class OutputSpec:
    """How one agent's output is requested, validated and accepted."""

    def __init__(
        self,
        output_type: Any,
        mode: OutputMode,
        validators: Sequence[OutputValidator] = (),
        tool_name: str = "submit_result",
    ) -> None:
        if mode not in _MODES:
            raise UserError(
                f"output_mode={mode!r} is not supported: use 'tool' (the default), 'native' "
                "(the provider's JSON-schema response format) or 'prompted'"
            )
        self.output_type = output_type
        self.text = output_type is str
        self.mode: OutputMode = mode
        self.validators: tuple[tuple[Callable[..., Any], int], ...] = tuple(
            (v, _validator_arity(v)) for v in validators
        )
        self.targets: tuple[_Target, ...] = ()
        self.tools: tuple[OutputTool, ...] = ()
        if self.text:
            return
        members = _union_members(output_type)
        if mode == "tool" and members and all(_is_object_type(m) for m in members):
            names = [f"{tool_name}_{_name_of(m)}" for m in members]
            if len(set(names)) != len(names):
                raise UserError(f"output_type {output_type!r}: two members share a name")
            self.targets = tuple(_target(m, n) for m, n in zip(members, names, strict=True))
        else:
            self.targets = (_target(output_type, tool_name),)
        if mode == "tool":
            self.tools = tuple(OutputTool(t.name, t.schema, t.validate) for t in self.targets)

    def add_validator(self, fn: OutputValidator) -> None:
        """Register another validator (``@agent.output_validator``)."""
        self.validators = (*self.validators, (fn, _validator_arity(fn)))

    @property
    def schema(self) -> dict[str, Any] | None:
        """The response schema of native and prompted modes (None for text output)."""
        return self.targets[0].schema if self.targets else None

    @property
    def schema_name(self) -> str:
        return _name_of(self.output_type) if not self.targets[0].wrapped else "result"

    def prompt_rule(self) -> str | None:
        """The system-prompt instruction of prompted mode."""
        if self.mode != "prompted" or self.schema is None:
            return None
        return (
            "Give your final answer as a single JSON value, with no other text, that "
            f"matches this JSON schema:\n{json.dumps(self.schema, separators=(',', ':'))}"
        )

    def tool_named(self, name: str) -> OutputTool | None:
        """The submit tool called ``name``, if it is one of this spec's."""
        return next((t for t in self.tools if t.name == name), None)

    def parse_text(self, text: str) -> tuple[Any, str | None]:
        """Validate a final text answer (native, prompted and ``str`` output).

        Returns ``(value, None)`` or ``(None, message for the model)``.
        """
        if self.text:
            return text, None
        target = self.targets[0]
        data = extract_json(text)
        if data is _NO_JSON:
            return None, "Your answer is not JSON. Respond with only the JSON value."
        try:
            return target.validate(data), None
        except _Unwrapped:
            return None, 'Your answer must be a JSON object {"result": ...}.'
        except ValidationError as exc:
            return None, f"Your answer does not match the schema: {_errors(exc)}"

    async def check(self, ctx: RunContext[Any], value: Any) -> tuple[Any, str | None]:
        """Run the validators; ``(value, None)`` or ``(None, retry message)``.

        A validator exception other than ``ModelRetry`` propagates (the turn ends ``error``).
        """
        for fn, arity in self.validators:
            try:
                out = fn(ctx, value) if arity == 2 else fn(value)
                if inspect.isawaitable(out):
                    out = await out
            except ModelRetry as exc:
                return None, exc.message
            value = out
        return value, None


def _errors(exc: ValidationError) -> str:
    parts: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "value"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


_NO_JSON: Any = object()
_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in a final answer: the whole text, a fenced block, or the first value.

    Returns a sentinel (not None, which is valid JSON) when there is none.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return decoder.raw_decode(text, i)[0]
            except ValueError:
                continue
    return _NO_JSON
