"""Property tests: history validation against a reference model, safe cuts, JSON round-trips."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from datetime import UTC

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from dive.errors import IncompleteToolTurnError
from dive.messages import (
    Base64Source,
    CacheControl,
    ContentBlock,
    DocumentBlock,
    FileSource,
    ImageBlock,
    JSONValue,
    Message,
    MessageKind,
    ProviderState,
    RedactedThinkingBlock,
    Role,
    ServerToolCall,
    ServerToolResult,
    TextBlock,
    TextSource,
    ThinkingBlock,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolRetryPolicy,
    UnknownBlock,
    UrlSource,
    Visibility,
    complete_turn_boundary,
    messages_from_json,
    messages_to_json,
    shared_view,
    validate_complete_turns,
)

REASONS = frozenset(
    {
        "tool calls require the assistant role",
        "tool results require the tool role",
        "orphan tool result",
        "tool message has no result",
        "tool-call group has an incomplete suffix",
        "non-tool message before tool-call group completed",
        "duplicate or unmatched tool result",
    }
)

# --- (a) reference checker -------------------------------------------------------------------


def _calls(m: Message) -> list[ToolCall]:
    return [b for b in m.content if isinstance(b, ToolCall)]


def _results(m: Message) -> list[ToolResult]:
    return [b for b in m.content if isinstance(b, ToolResult)]


def _pick(open_calls: list[ToolCall], result_id: str) -> int | None:
    """The spec's matching rule over the still-open calls (kept in call order)."""
    if result_id:
        for pos, c in enumerate(open_calls):
            if c.id == result_id:
                return pos
        for pos, c in enumerate(open_calls):
            if not c.id:
                return pos
        return None
    return 0 if open_calls else None


def reference_accepts(msgs: Sequence[Message]) -> bool:
    """An independent model: each assistant message with k calls is followed by exactly k tool
    messages, each holding one result that matches a distinct call."""
    pos = 0
    while pos < len(msgs):
        m = msgs[pos]
        calls = _calls(m)
        if m.role == "tool" or _results(m):
            return False  # a result outside a group is never acceptable
        if not calls:
            pos += 1
            continue
        if m.role != "assistant":
            return False
        named = [c.id for c in calls if c.id]
        if len(named) != len(set(named)):
            return False
        group = msgs[pos + 1 : pos + 1 + len(calls)]
        if len(group) != len(calls):
            return False
        open_calls = list(calls)
        for reply in group:
            results = _results(reply)
            if reply.role != "tool" or _calls(reply) or len(results) != 1:
                return False
            chosen = _pick(open_calls, results[0].tool_call_id)
            if chosen is None:
                return False
            del open_calls[chosen]
        assert not open_calls
        pos += len(calls) + 1
    return True


def group_spans(msgs: Sequence[Message]) -> list[tuple[int, int]]:
    """(start, end) of every tool-call group of a valid history; end is exclusive."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while pos < len(msgs):
        k = len(_calls(msgs[pos]))
        if k:
            spans.append((pos, pos + k + 1))
            pos += k + 1
        else:
            pos += 1
    return spans


# --- (a) history generator ---------------------------------------------------------------------

ID_POOL = ("a", "b", "c", "d", "e")
visibilities: st.SearchStrategy[Visibility] = st.sampled_from(("shared", "private"))


def _tool_message(result_id: str, visibility: Visibility) -> Message:
    result = ToolResult(tool_call_id=result_id, name="t", content=(TextBlock(text="r"),))
    return Message(role="tool", content=(result,), name="t", visibility=visibility)


@st.composite
def plain_messages(draw: st.DrawFn) -> Message:
    visibility = draw(visibilities)
    choice = draw(st.integers(0, 5))
    text = (TextBlock(text="x"),)
    match choice:
        case 0:
            return Message(role="system", content=text, visibility=visibility)
        case 1:
            return Message(role="user", content=text, visibility=visibility)
        case 2:
            return Message(role="assistant", content=text, visibility=visibility)
        case 3:
            return Message(role="user", kind="custom", content=text, visibility=visibility)
        case 4:
            return Message(
                role="assistant",
                content=(ThinkingBlock(thinking="t", signature="s"), *text),
                visibility=visibility,
            )
        case _:
            return Message(
                role="assistant",
                content=(
                    ServerToolCall(id="s", name="web_search"),
                    ServerToolResult(tool_use_id="s", result_type="web_search_tool_result"),
                ),
                visibility=visibility,
            )


@st.composite
def tool_groups(draw: st.DrawFn) -> list[Message]:
    """A well-formed group: distinct (or empty) call IDs, results in any order."""
    k = draw(st.integers(1, 3))
    named = draw(st.lists(st.sampled_from(ID_POOL), min_size=k, max_size=k, unique=True))
    ids = [("" if draw(st.integers(0, 4)) == 0 else i) for i in named]
    calls = [ToolCall(id=i, name=f"n{n}", arguments={"n": n}) for n, i in enumerate(ids)]
    prefix: list[TextBlock | ThinkingBlock] = draw(
        st.sampled_from(
            [[], [TextBlock(text="calling")], [ThinkingBlock(thinking="t", signature="s")]]
        )
    )
    assistant = Message(role="assistant", content=(*prefix, *calls), visibility=draw(visibilities))
    order = draw(st.permutations(ids))
    return [assistant, *(_tool_message(i, draw(visibilities)) for i in order)]


@st.composite
def valid_histories(draw: st.DrawFn) -> list[Message]:
    segments = draw(
        st.lists(st.one_of(plain_messages().map(lambda m: [m]), tool_groups()), max_size=8)
    )
    return [m for seg in segments for m in seg]


_IDS_OR_JUNK: st.SearchStrategy[str] = st.sampled_from((*ID_POOL, "", "zzz"))


def _replace_call_id(m: Message, which: int, new_id: str) -> Message:
    seen = -1
    content: list[ContentBlock] = []
    for b in m.content:
        if isinstance(b, ToolCall):
            seen += 1
            if seen == which:
                b = ToolCall(id=new_id, name=b.name, arguments=b.arguments)
        content.append(b)
    return m.with_(content=tuple(content))


@st.composite
def corrupt(draw: st.DrawFn, msgs: list[Message]) -> list[Message]:
    """Apply one random corruption (the result may happen to still be valid)."""
    out = list(msgs)
    n = len(out)
    op = draw(
        st.sampled_from(
            (
                "drop_result",
                "extra_result",
                "interleave_user",
                "duplicate_id",
                "empty_id",
                "swap",
                "tool_without_result",
                "unknown_result_id",
                "wrong_role",
                "tool_with_call",
                "drop_any",
            )
        )
    )
    tool_positions = [i for i, m in enumerate(out) if m.role == "tool"]
    call_positions = [i for i, m in enumerate(out) if m.tool_calls]
    anywhere = st.integers(0, n)
    match op:
        case "drop_result" if tool_positions:
            del out[draw(st.sampled_from(tool_positions))]
        case "extra_result":
            out.insert(draw(anywhere), _tool_message(draw(_IDS_OR_JUNK), "shared"))
        case "interleave_user":
            out.insert(draw(anywhere), Message(role="user", content=(TextBlock(text="hey"),)))
        case "duplicate_id" if call_positions:
            i = draw(st.sampled_from(call_positions))
            ids = [c.id for c in out[i].tool_calls]
            if len(ids) >= 2:
                first, second = draw(st.permutations(range(len(ids))))[:2]
                dup = draw(st.sampled_from(ID_POOL))
                out[i] = _replace_call_id(_replace_call_id(out[i], first, dup), second, dup)
        case "empty_id" if call_positions or tool_positions:
            i = draw(st.sampled_from(call_positions + tool_positions))
            if out[i].role == "tool":
                out[i] = _tool_message("", out[i].visibility)
            else:
                which = draw(st.integers(0, len(out[i].tool_calls) - 1))
                out[i] = _replace_call_id(out[i], which, "")
        case "swap" if n >= 2:
            i = draw(st.integers(0, n - 2))
            out[i], out[i + 1] = out[i + 1], out[i]
        case "tool_without_result":
            bare = Message(role="tool", content=draw(st.sampled_from([(), (TextBlock(text="x"),)])))
            if tool_positions and draw(st.booleans()):
                out[draw(st.sampled_from(tool_positions))] = bare
            else:
                out.insert(draw(anywhere), bare)
        case "unknown_result_id" if tool_positions:
            i = draw(st.sampled_from(tool_positions))
            out[i] = _tool_message(draw(_IDS_OR_JUNK), out[i].visibility)
        case "wrong_role" if n:
            i = draw(st.integers(0, n - 1))
            role: Role = draw(st.sampled_from(("system", "user", "assistant", "tool")))
            out[i] = out[i].with_(role=role)
        case "tool_with_call":
            bad = Message(role="tool", content=(ToolCall(id=draw(_IDS_OR_JUNK), name="t"),))
            out.insert(draw(anywhere), bad)
        case "drop_any" if n:
            del out[draw(st.integers(0, n - 1))]
        case _:
            pass
    return out


@st.composite
def maybe_corrupt_histories(draw: st.DrawFn) -> tuple[list[Message], bool]:
    msgs = draw(valid_histories())
    rounds = draw(st.integers(0, 3))
    for _ in range(rounds):
        msgs = draw(corrupt(msgs))
    return msgs, rounds == 0


@given(maybe_corrupt_histories())
def test_validate_accepts_exactly_the_well_formed(case: tuple[list[Message], bool]) -> None:
    msgs, pristine = case
    expected = reference_accepts(msgs)
    if pristine:
        assert expected, "generator produced an invalid uncorrupted history"
    if expected:
        validate_complete_turns(msgs)
        return
    with pytest.raises(IncompleteToolTurnError) as info:
        validate_complete_turns(msgs)
    err = info.value
    event(err.reason if err.reason in REASONS else "duplicate tool call ID")
    assert 0 <= err.index < len(msgs)
    assert err.reason in REASONS or err.reason.startswith("duplicate tool call ID ")
    assert str(err) == f"message: incomplete tool turn: message {err.index}: {err.reason}"


@st.composite
def single_groups(draw: st.DrawFn) -> list[Message]:
    """One assistant message and its replies with IDs drawn from a tiny pool, so duplicate,
    empty, unknown and fallback matches are all frequent."""
    # Empty IDs are weighted double: they drive the fallback rules.
    call_ids = draw(st.lists(st.sampled_from(("a", "b", "c", "", "")), min_size=1, max_size=3))
    calls = tuple(ToolCall(id=i, name="same") for i in call_ids)
    pool: st.SearchStrategy[str] = st.sampled_from(("a", "b", "c", "", "zzz"))
    replies = [draw(pool) if draw(st.booleans()) else i for i in draw(st.permutations(call_ids))]
    match draw(st.integers(0, 5)):
        case 0:
            replies.append(draw(pool))
        case 1:
            replies.pop()
        case _:
            pass
    return [
        Message(role="assistant", content=calls),
        *(_tool_message(i, "shared") for i in replies),
    ]


@given(single_groups())
def test_group_matching_agrees_with_reference(msgs: list[Message]) -> None:
    expected = reference_accepts(msgs)
    event("accepted" if expected else "rejected")
    if expected:
        validate_complete_turns(msgs)
    else:
        with pytest.raises(IncompleteToolTurnError):
            validate_complete_turns(msgs)


def test_group_matching_exhaustive() -> None:
    """Every group of up to three calls over IDs {a, b, ""} with one reply fewer, as many, or
    one more, over {a, b, "", zzz}: the implementation agrees with the reference on all."""
    results = {i: _tool_message(i, "shared") for i in ("a", "b", "", "zzz")}
    checked = accepted = 0
    for k in range(1, 4):
        for call_ids in itertools.product(("a", "b", ""), repeat=k):
            assistant = Message(
                role="assistant", content=tuple(ToolCall(id=i, name="same") for i in call_ids)
            )
            for n in (k - 1, k, k + 1):
                for reply_ids in itertools.product(results, repeat=n):
                    msgs = [assistant, *(results[i] for i in reply_ids)]
                    expected = reference_accepts(msgs)
                    try:
                        validate_complete_turns(msgs)
                        ok = True
                    except IncompleteToolTurnError:
                        ok = False
                    assert ok == expected, (call_ids, reply_ids)
                    checked += 1
                    accepted += ok
    assert checked == 9891
    assert accepted > 0


# --- (b) complete_turn_boundary --------------------------------------------------------------


@given(valid_histories())
def test_boundary_never_splits_a_tool_exchange(msgs: list[Message]) -> None:
    n = len(msgs)
    spans = group_spans(msgs)
    for preferred in range(-2, n + 3):
        start = complete_turn_boundary(msgs, preferred)
        assert 0 <= start <= n
        assert not any(a < start < b for a, b in spans), (preferred, start, spans)
        validate_complete_turns(msgs[:start])
        validate_complete_turns(msgs[start:])
        # Moves at most one group: right, or left when the group ends the history.
        clamped = min(max(preferred, 0), n)
        inside = [(a, b) for a, b in spans if a < clamped < b]
        if inside:
            a, b = inside[0]
            assert start == (b if b < n else a)
        else:
            assert start == clamped


@given(maybe_corrupt_histories(), st.integers(-3, 30))
def test_boundary_raises_on_invalid_history(
    case: tuple[list[Message], bool], preferred: int
) -> None:
    msgs, _ = case
    if reference_accepts(msgs):
        complete_turn_boundary(msgs, preferred)
        return
    with pytest.raises(IncompleteToolTurnError):
        complete_turn_boundary(msgs, preferred)


@given(valid_histories())
def test_shared_view_output_validates(msgs: list[Message]) -> None:
    view = shared_view(msgs)
    validate_complete_turns(view)
    assert all(m.visibility == "shared" for m in view if m.role != "tool")
    # Every shared non-tool message survives, in order.
    assert [m for m in view if m.role != "tool"] == [
        m for m in msgs if m.role != "tool" and m.visibility == "shared"
    ]


# --- (c) JSON round-trips ----------------------------------------------------------------------

short_text: st.SearchStrategy[str] = st.text(max_size=8)
opt_text: st.SearchStrategy[str | None] = st.none() | short_text

json_scalars: st.SearchStrategy[JSONValue] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    short_text,
)


def _json_containers(children: st.SearchStrategy[JSONValue]) -> st.SearchStrategy[JSONValue]:
    return st.lists(children, max_size=3) | st.dictionaries(short_text, children, max_size=3)


json_values: st.SearchStrategy[JSONValue] = st.recursive(
    json_scalars, _json_containers, max_leaves=6
)
json_objects: st.SearchStrategy[dict[str, JSONValue]] = st.dictionaries(
    short_text, json_values, max_size=3
)
cache_controls: st.SearchStrategy[CacheControl | None] = st.none() | st.builds(
    CacheControl, ttl=st.sampled_from(("5m", "1h"))
)

base64_images: st.SearchStrategy[Base64Source] = st.builds(
    Base64Source,
    media_type=st.sampled_from(("image/jpeg", "image/png", "image/gif", "image/webp")),
    data=short_text,
)
url_sources: st.SearchStrategy[UrlSource] = st.builds(UrlSource, url=short_text)
file_sources: st.SearchStrategy[FileSource] = st.builds(FileSource, file_id=short_text)

text_blocks: st.SearchStrategy[TextBlock] = st.builds(
    TextBlock,
    text=short_text,
    citations=st.lists(json_values, max_size=2).map(tuple),
    cache_control=cache_controls,
)
image_blocks: st.SearchStrategy[ImageBlock] = st.builds(
    ImageBlock,
    source=st.one_of(base64_images, url_sources, file_sources),
    cache_control=cache_controls,
)
document_blocks: st.SearchStrategy[DocumentBlock] = st.builds(
    DocumentBlock,
    source=st.one_of(
        st.builds(
            TextSource, data=short_text, media_type=st.sampled_from(("text/plain", "text/md"))
        ),
        st.builds(Base64Source, media_type=st.just("application/pdf"), data=short_text),
        url_sources,
        file_sources,
    ),
    title=opt_text,
    context=opt_text,
    citations=st.booleans(),
    cache_control=cache_controls,
)
tool_calls: st.SearchStrategy[ToolCall] = st.builds(
    ToolCall,
    id=short_text,
    name=short_text,
    arguments=json_objects,
    raw_arguments=opt_text,
    signature=opt_text,
    provider=opt_text,
    cache_control=cache_controls,
)
tool_results: st.SearchStrategy[ToolResult] = st.builds(
    ToolResult,
    tool_call_id=short_text,
    name=opt_text,
    content=st.lists(st.one_of(text_blocks, image_blocks, document_blocks), max_size=3).map(tuple),
    structured=json_values,
    is_error=st.booleans(),
    cache_control=cache_controls,
)
thinking_blocks: st.SearchStrategy[ThinkingBlock] = st.builds(
    ThinkingBlock, thinking=short_text, signature=short_text, provider=opt_text
)
redacted_blocks: st.SearchStrategy[RedactedThinkingBlock] = st.builds(
    RedactedThinkingBlock, data=short_text, provider=opt_text
)
server_calls: st.SearchStrategy[ServerToolCall] = st.builds(
    ServerToolCall,
    id=short_text,
    name=short_text,
    input=json_objects,
    provider=opt_text,
    cache_control=cache_controls,
)
server_results: st.SearchStrategy[ServerToolResult] = st.builds(
    ServerToolResult,
    tool_use_id=short_text,
    result_type=short_text,
    content=json_values,
    provider=opt_text,
    cache_control=cache_controls,
)
unknown_blocks: st.SearchStrategy[UnknownBlock] = st.builds(
    UnknownBlock, provider=short_text, block_type=short_text, data=json_objects
)

NonResultBlock = (
    TextBlock
    | ImageBlock
    | DocumentBlock
    | ToolCall
    | ThinkingBlock
    | RedactedThinkingBlock
    | ServerToolCall
    | ServerToolResult
    | UnknownBlock
)
non_result_blocks: st.SearchStrategy[NonResultBlock] = st.one_of(
    text_blocks,
    image_blocks,
    document_blocks,
    tool_calls,
    thinking_blocks,
    redacted_blocks,
    server_calls,
    server_results,
    unknown_blocks,
)
contents: st.SearchStrategy[tuple[NonResultBlock | ToolResult, ...]] = st.one_of(
    st.lists(non_result_blocks, max_size=4).map(tuple),
    tool_results.map(lambda r: (r,)),
)
roles: st.SearchStrategy[Role] = st.sampled_from(("system", "user", "assistant", "tool"))
kinds: st.SearchStrategy[MessageKind] = st.sampled_from(
    ("standard", "branch_summary", "compaction_summary", "command_output", "custom")
)
provider_states: st.SearchStrategy[ProviderState | None] = st.none() | st.builds(
    ProviderState, provider=short_text, api=short_text, data=json_values
)

messages: st.SearchStrategy[Message] = st.builds(
    Message,
    role=roles,
    content=contents,
    kind=kinds,
    visibility=visibilities,
    id=opt_text,
    name=opt_text,
    metadata=st.dictionaries(short_text, short_text, max_size=3),
    provider_state=provider_states,
    created_at=st.none() | st.datetimes(timezones=st.just(UTC)),
)


@given(messages)
def test_message_round_trip(m: Message) -> None:
    text = m.to_json()
    back = Message.from_json(text)
    assert back == m
    assert back.to_json() == text
    assert Message.from_dict(json.loads(text)) == m
    assert json.loads(text)["role"] == m.role


@given(st.lists(messages, max_size=4))
def test_history_round_trip(ms: list[Message]) -> None:
    text = messages_to_json(ms)
    assert messages_from_json(text) == tuple(ms)
    assert messages_to_json(messages_from_json(text)) == text


@given(non_result_blocks | tool_results)
def test_every_block_has_a_type_tag(block: NonResultBlock | ToolResult) -> None:
    m = Message(role="assistant", content=(block,))
    encoded = json.loads(m.to_json())["content"][0]
    assert encoded["type"] == block.type


@st.composite
def tool_definitions(draw: st.DrawFn) -> ToolDefinition:
    idempotent = draw(st.booleans())
    effect = draw(st.sampled_from((None, "read_only", "write", "external_side_effect")))
    policy = draw(
        st.none()
        | st.builds(
            ToolRetryPolicy,
            max_attempts=st.integers(1, 10),
            backoff=st.floats(0, 60),
            max_backoff=st.floats(0, 600),
        )
    )
    if policy is not None and policy.max_attempts > 1 and effect != "read_only":
        idempotent = True
    return ToolDefinition(
        name=draw(st.from_regex(r"[a-zA-Z0-9_-]{1,64}", fullmatch=True)),
        description=draw(short_text),
        input_schema=draw(json_objects),
        terminal=draw(st.booleans()),
        sequential_only=draw(st.booleans()),
        halts_batch=draw(st.booleans()),
        tags=draw(st.frozensets(short_text, max_size=3)),
        origin=draw(st.sampled_from(("local", "mcp:server", "subagent:child", "provider"))),
        metadata=draw(st.dictionaries(short_text, short_text, max_size=3)),
        cache_control=draw(cache_controls),
        required_permissions=draw(st.frozensets(short_text, max_size=3)),
        requires_approval=draw(st.booleans()),
        risk_level=draw(st.sampled_from((None, "low", "medium", "high", "critical"))),
        effect_type=effect,
        idempotent=idempotent,
        timeout=draw(st.none() | st.floats(min_value=1e-3, max_value=1e6)),
        retry_policy=policy,
    )


@given(tool_definitions())
def test_tool_definition_round_trip(td: ToolDefinition) -> None:
    data = td.to_dict()
    assert ToolDefinition.from_dict(data) == td
    assert ToolDefinition.from_dict(json.loads(json.dumps(data))) == td
    assert td.read_only == (td.effect_type == "read_only")
