"""Form posts: parsing (``application/x-www-form-urlencoded``) and decisions from fields.

The buttons post ``action`` = ``approve``, ``deny`` or ``answer``. An approval may carry
``for_session`` (allow similar calls for the rest of the owning process) and a denial a
``message``. An answer is an AskUser ``choice`` or free ``answer`` text, an elicitation's
fields (``field.<name>``, typed by the requested schema), or, for a visit (URL
elicitation), a confirmation; free text that is a JSON object or list is sent as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from dive.agent import ToolApproval
from dive.errors import UserError
from dive.viewer._inbox import Decision, Wait

__all__ = ["MAX_FORM", "decision_from_form", "parse_form"]

MAX_FORM = 1 << 20


def parse_form(body: bytes) -> dict[str, str]:
    """The fields of an urlencoded body (the last value of a repeated name wins)."""
    if len(body) > MAX_FORM:
        raise UserError("the form is larger than 1 MiB; nothing was changed")
    return dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))


def _typed(name: str, text: str, kind: str) -> Any:
    if kind == "boolean":
        return text.lower() in ("1", "true", "yes", "on")
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            raise UserError(f"{name} must be a {kind}; nothing was changed") from None
    return text


def _parsed(text: str) -> Any:
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _answer(wait: Wait, form: Mapping[str, str]) -> Decision:
    if wait.kind == "approval":
        raise UserError("this call waits for an approval: use Approve or Deny")
    if wait.kind == "elicitation" and wait.fields:
        out: dict[str, Any] = {}
        for name, kind, required in wait.fields:
            text = form.get(f"field.{name}", "").strip()
            if not text and kind != "boolean":
                if required:
                    raise UserError(f"{name} is required; nothing was changed")
                continue
            out[name] = _typed(name, text, kind)
        return out
    if wait.kind == "auth":
        return {"action": "accept"} if wait.call.metadata.get("type") else "done"
    text = form.get("answer", "").strip() or form.get("choice", "").strip()
    if not text:
        raise UserError("the answer is empty; type one (or pick a choice) and press Answer")
    return _parsed(text)


def decision_from_form(wait: Wait, form: Mapping[str, str]) -> Decision:
    """The decision a posted form makes about ``wait`` (``UserError`` when it makes none)."""
    action = form.get("action", "")
    if action == "approve":
        return ToolApproval(approved=True, for_session=form.get("for_session") == "on")
    if action == "deny":
        message = form.get("message", "").strip() or None
        return ToolApproval(approved=False, message=message)
    if action == "answer":
        return _answer(wait, form)
    raise UserError(f"unknown action {action!r}: use approve, deny or answer")
