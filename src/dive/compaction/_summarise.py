"""The summariser: a rolling summary over chunks, each request inside the input budget.

One request per chunk of transcript. The first asks for a continuation summary of its chunk;
each later one gets the summary so far plus the next chunk and asks for one summary covering
both (a summary of a summary), so a history of any length is summarised without a request
over ``max_input_tokens``. Each request is measured before it is sent (counted by a
``TokenCounter`` model, estimated otherwise); one found over budget is split in two, or its
entry cut shorter, and measured again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dive.compaction._tokens import estimate_text, measure
from dive.compaction._transcript import Entry, shrink
from dive.errors import UserError
from dive.llm import Model, ModelRequest, ModelResponse, ModelSettings, Usage, collect
from dive.messages import Message

__all__ = ["DEFAULT_INSTRUCTIONS", "Summary", "chunk_budget", "extract", "summarise"]

DEFAULT_INSTRUCTIONS = """\
You compact a conversation between a user and an AI agent so that the agent can continue \
the work in a shorter context. Write a continuation summary that lets the agent go on as if \
it had read everything: the user's goals and every explicit request or constraint; the \
decisions made and why; what was done, with the exact file paths, commands, identifiers, \
numbers and results that matter; errors met and how they were resolved; work still open; \
and the next step the agent was about to take. Keep quoted details exact. Do not address \
the user and do not continue the conversation. Reply with the summary inside \
<summary></summary> tags and nothing else."""

_FIRST = "Here is the conversation so far:\n<transcript>\n{body}\n</transcript>"
_LATER = (
    "Here is the summary of the conversation so far:\n<summary>\n{summary}\n</summary>\n\n"
    "And here is how it continued:\n<transcript>\n{body}\n</transcript>\n\n"
    "Write one summary that covers both."
)
_TAG = re.compile(r"<summary>(.*?)(?:</summary>|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Summary:
    """What the summariser produced: the text, its usage and how many requests it took."""

    text: str
    usage: Usage
    passes: int


def extract(text: str) -> str:
    """The text inside ``<summary>`` tags (the whole text when the tags are missing)."""
    found = _TAG.search(text)
    return (found.group(1) if found else text).strip()


def _prompt(summary: str | None, entries: Sequence[Entry]) -> str:
    body = "\n".join(e.text for e in entries)
    if summary is None:
        return _FIRST.format(body=body)
    return _LATER.format(summary=summary, body=body)


async def _ask(model: Model, request: ModelRequest) -> ModelResponse:
    if model.supports_streaming:
        return await collect(model, request)
    return await model.generate(request)


@dataclass(slots=True)
class _Pass:
    model: Model
    instructions: str
    budget: int
    settings: ModelSettings
    usage: Usage = Usage.ZERO
    passes: int = 0

    async def fits(self, request: ModelRequest) -> bool:
        size = await measure(self.model, request.messages, system=request.system)
        return size.tokens <= self.budget

    async def run(self, summary: str | None, entries: list[Entry]) -> str:
        request = self._request(summary, entries)
        if not await self.fits(request):
            if len(entries) > 1:
                half = len(entries) // 2
                summary = await self.run(summary, entries[:half])
                return await self.run(summary, entries[half:])
            (only,) = entries
            limit = int(len(only.text) * 0.7)
            if limit < 200:
                raise UserError(
                    "the summariser's input budget is too small for its own instructions and "
                    "the summary so far; raise max_input_tokens"
                )
            cut = shrink(only.text, limit)
            return await self.run(summary, [Entry(cut, estimate_text(cut))])
        response = await _ask(self.model, request)
        self.usage = self.usage + response.usage
        self.passes += 1
        text = extract(response.text)
        if not text:
            raise UserError(
                f"the summariser ({self.model.provider}:{self.model.name}) returned no summary "
                f"(stop reason {response.stop_reason!r}); nothing was compacted"
            )
        return text

    def _request(self, summary: str | None, entries: Sequence[Entry]) -> ModelRequest:
        return ModelRequest(
            system=self.instructions,
            messages=(Message.user(_prompt(summary, entries)),),
            settings=self.settings,
        )


async def summarise(
    model: Model,
    chunks: Sequence[list[Entry]],
    *,
    instructions: str,
    max_input_tokens: int,
    max_summary_tokens: int,
) -> Summary:
    """Summarise ``chunks`` in order (see the module docstring)."""
    settings = ModelSettings(max_tokens=max_summary_tokens)
    state = _Pass(model, instructions, max_input_tokens, settings)
    summary: str | None = None
    for entries in chunks:
        summary = await state.run(summary, entries)
    return Summary(summary or "", state.usage, state.passes)


def chunk_budget(instructions: str, max_input_tokens: int, max_summary_tokens: int) -> int:
    """Tokens of transcript one request may carry next to the instructions and a summary."""
    overhead = estimate_text(instructions + _LATER) + max_summary_tokens + 64
    budget = max_input_tokens - overhead
    if budget < 256:
        need = overhead + 256
        raise UserError(
            f"max_input_tokens={max_input_tokens} leaves no room for the transcript next to "
            f"the instructions and a summary of up to {max_summary_tokens} tokens; use at least "
            f"{need} (or lower max_summary_tokens)"
        )
    return budget
