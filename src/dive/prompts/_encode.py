"""Encoders for JSON, YAML and Markdown lists: a value in, the exact text a binder binds out.

Each encoder raises ``PromptError`` naming the binder (``label``, like ``bind_json('user')``)
and what to pass instead; the encoder's own exception is the cause.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, cast

import yaml
from pydantic import BaseModel

from dive.errors import PromptError

__all__ = ["encode_json", "encode_list", "encode_yaml", "model_data"]

_CAUSE_SHOWN = 200  # characters of an encoder's message quoted in an error
_LINE_BREAK = re.compile("[\n\r\v\f\x85\u2028\u2029]")


def _cause(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "the value is nested too deeply"
    if isinstance(exc, yaml.representer.RepresenterError) and len(exc.args) == 2:
        return f"{exc.args[0]} of type {type(exc.args[1]).__name__}"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= _CAUSE_SHOWN else text[: _CAUSE_SHOWN - 3] + "..."


def model_data(model: BaseModel) -> dict[str, Any]:
    """A pydantic model as JSON-compatible data (``model_dump(mode="json")``)."""
    return model.model_dump(mode="json")


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return model_data(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_json(label: str, value: object) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``; pydantic models at any depth."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError, RecursionError) as exc:
        raise PromptError(
            f"{label}: cannot encode the value as JSON ({_cause(exc)}); pass JSON-compatible "
            "data (dict with str keys, list, tuple, str, int, float, bool, None) or pydantic "
            "models"
        ) from exc


class _Dumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that also writes pydantic models, as their JSON-mode dump."""


def _represent_model(dumper: yaml.SafeDumper, model: BaseModel) -> yaml.Node:
    return dumper.represent_dict(model_data(model))


_Dumper.add_multi_representer(BaseModel, _represent_model)


def encode_yaml(label: str, value: object) -> str:
    """``yaml.safe_dump(value, sort_keys=False, allow_unicode=True)``; also pydantic models."""
    try:
        return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, TypeError, ValueError, RecursionError) as exc:
        raise PromptError(
            f"{label}: cannot encode the value as YAML ({_cause(exc)}); pass plain data "
            "(dict, list, str, int, float, bool, None, dates) or pydantic models"
        ) from exc


def encode_list(label: str, items: Iterable[str], *, ordered: bool) -> str:
    """Markdown list lines (``- item`` or ``1. item``) joined by newlines; none gives ``""``."""
    if isinstance(items, str | bytes | bytearray):
        raise PromptError(
            f"{label}: items must be an iterable of str, got {type(items).__name__}; "
            "pass a list of strings, like [text] for a single item"
        )
    lines: list[str] = []
    given = cast("Iterable[object]", items)  # checked at run time: callers may pass anything
    for index, item in enumerate(given):
        if not isinstance(item, str):
            raise PromptError(
                f"{label}: items[{index}] is of type {type(item).__name__}, not str; convert each "
                "item to text first, or bind structured data with bind_json, bind_xml or "
                "bind_yaml"
            )
        if found := _LINE_BREAK.search(item):
            raise PromptError(
                f"{label}: items[{index}] contains a line break ({found.group()!r}); an item "
                "must be one line: split it into several items, or bind multi-line data with "
                "bind_json, bind_xml or bind_yaml"
            )
        marker = f"{index + 1}." if ordered else "-"
        lines.append(f"{marker} {str.__str__(item)}")
    return "\n".join(lines)
