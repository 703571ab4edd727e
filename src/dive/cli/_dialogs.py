"""Questions the chat asks in place: permission prompts, and answers to suspended calls.

:class:`TerminalDialog` is the permission engine's dialog: ``[y]`` allow once, ``[a]`` allow
for this session, ``[n]`` deny (Ctrl-C or Ctrl-D deny too). :meth:`TerminalDialog.answer`
answers the pending calls of a suspended turn: an approval (held by the gate, e.g. a turn
``dive run`` suspended) the same way; an ``AskUser`` question by number or in words; a
request with a JSON schema (an MCP elicitation) field by field; anything else in words. An
interrupted answer leaves the turn suspended.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from rich.console import Console
from rich.text import Text

from dive.agent import ToolApproval
from dive.cli._input import LineReader
from dive.cli._render import Renderer
from dive.permissions import ApprovalRequest, DialogAnswer, DialogDecision
from dive.toolkit import ASK_USER_TYPE
from dive.turns import PendingToolCall

__all__ = ["TerminalDialog"]

_CHOICES = "  [y] allow once · [a] allow for this session · [n] deny › "
_ANSWERS: dict[str, DialogDecision] = {
    "y": "allow",
    "yes": "allow",
    "1": "allow",
    "a": "allow_for_session",
    "always": "allow_for_session",
    "2": "allow_for_session",
    "n": "deny",
    "no": "deny",
    "3": "deny",
}
_SCHEMA_KEYS = ("requestedSchema", "requested_schema", "schema")


class _Interrupted(Exception):
    pass


class TerminalDialog:
    """Asks the person at the terminal.

    Args:
        reader: where answers are read.
        renderer: paused while asking.
        console: where questions are printed.
    """

    def __init__(self, reader: LineReader, renderer: Renderer, console: Console) -> None:
        self.reader = reader
        self.renderer = renderer
        self.console = console

    def _question(self, text: str) -> None:
        self.renderer.pause()
        self.console.print(Text("? ", style="bold yellow") + Text(text))

    async def _line(self, prompt: str) -> str:
        try:
            return (await self.reader.ask(prompt)).strip()
        except (KeyboardInterrupt, EOFError):
            raise _Interrupted from None

    async def _decision(self) -> DialogDecision:
        while True:
            raw = (await self._line(_CHOICES)).lower()
            if raw in _ANSWERS:
                return _ANSWERS[raw]
            self.console.print("answer y, a or n", style="dim")

    async def __call__(self, request: ApprovalRequest) -> DialogAnswer:
        """The permission engine's question about one call."""
        self._question(request.prompt)
        try:
            decision = await self._decision()
        except _Interrupted:
            decision = "deny"
        self.renderer.busy(f"running {request.tool.name}" if decision != "deny" else "thinking")
        return DialogAnswer(decision=decision)

    async def answer(self, pending: Sequence[PendingToolCall]) -> dict[str, Any] | None:
        """Answers for a suspended turn's calls, by call id (None: interrupted)."""
        answers: dict[str, Any] = {}
        try:
            for call in pending:
                answers[call.id] = await self._answer_one(call)
        except _Interrupted:
            self.console.print("the turn stays suspended; /resume answers it later", style="yellow")
            return None
        return answers

    async def _answer_one(self, call: PendingToolCall) -> Any:
        metadata = dict(call.metadata)
        if call.reason == "approval_required":
            self._question(call.prompt or f"Allow calling {call.name}?")
            decision = await self._decision()
            return ToolApproval(
                approved=decision != "deny", for_session=decision == "allow_for_session"
            )
        self._question(call.prompt or f"{call.name} is waiting for an answer")
        if metadata.get("type") == ASK_USER_TYPE:
            return await self._choice(cast(list[str], metadata.get("choices") or []))
        schema = next(
            (metadata[k] for k in _SCHEMA_KEYS if isinstance(metadata.get(k), dict)), None
        )
        if schema is not None:
            return await self._fields(cast(Mapping[str, Any], schema))
        if url := metadata.get("url"):
            self.console.print(f"  open {url}, then press Enter", style="dim")
        text = await self._line("  › ")
        return _parsed(text)

    async def _choice(self, choices: Sequence[str]) -> str:
        for i, choice in enumerate(choices, 1):
            self.console.print(f"  {i}. {choice}")
        text = await self._line("  answer (a number or your words) › ")
        if text.isdigit() and 1 <= int(text) <= len(choices):
            return choices[int(text) - 1]
        return text

    async def _fields(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties") or {})
        required = set(cast(list[str], schema.get("required") or []))
        out: dict[str, Any] = {}
        for name, spec in properties.items():
            kind = str(spec.get("type", "string"))
            options = spec.get("enum")
            hint = f" one of {', '.join(map(str, options))}" if options else f" ({kind})"
            while True:
                text = await self._line(
                    f"  {name}{hint}{'' if name in required else ', optional'} › "
                )
                if not text and name not in required:
                    break
                value = _typed(text, kind)
                if value is not None:
                    out[name] = value
                    break
                self.console.print(f"  expected a {kind}", style="dim")
        return out


def _typed(text: str, kind: str) -> Any:
    if kind == "boolean":
        return {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}.get(
            text.lower()
        )
    if kind in ("integer", "number"):
        try:
            return int(text) if kind == "integer" else float(text)
        except ValueError:
            return None
    return text if text else None


def _parsed(text: str) -> Any:
    """JSON when the answer is a JSON object or list, else the text."""
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text
