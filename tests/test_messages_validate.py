"""History validation, safe cut points and the shared view (messages.md §2, §8, §9)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from dive.errors import IncompleteToolTurnError
from dive.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolCall,
    ToolResult,
    Visibility,
    complete_turn_boundary,
    shared_view,
    validate_complete_turns,
)

# --- builders ------------------------------------------------------------------------------


def call(id: str, name: str = "t") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"x": 1})


def A(*ids: str, visibility: Visibility = "shared") -> Message:
    """An assistant message with one call per ID."""
    return Message(role="assistant", content=tuple(call(i) for i in ids), visibility=visibility)


def r(id: str, name: str | None = "t", visibility: Visibility = "shared") -> Message:
    """A tool message answering ``id``."""
    result = ToolResult(tool_call_id=id, name=name, content=(TextBlock(text=f"result {id}"),))
    return Message(role="tool", content=(result,), name=name, visibility=visibility)


def user(text: str = "u", visibility: Visibility = "shared") -> Message:
    return Message(role="user", content=(TextBlock(text=text),), visibility=visibility)


def system(text: str = "s") -> Message:
    return Message(role="system", content=(TextBlock(text=text),))


def assistant(text: str = "a", visibility: Visibility = "shared") -> Message:
    return Message(role="assistant", content=(TextBlock(text=text),), visibility=visibility)


# --- §8 table --------------------------------------------------------------------------------

Case = tuple[Callable[[], list[Message]], tuple[int, str] | None]

ROWS: dict[str, Case] = {
    "row-1": (lambda: [], None),
    "row-2": (
        lambda: [
            system(),
            user(),
            assistant(),
            Message(role="user", kind="custom", content=(TextBlock(text="app record"),)),
            Message(role="user", kind="compaction_summary", content=(TextBlock(text="summary"),)),
        ],
        None,
    ),
    "row-3": (
        lambda: [
            Message(
                role="assistant",
                content=(
                    ThinkingBlock(thinking="hmm", signature="sig", provider="anthropic"),
                    RedactedThinkingBlock(data="opaque", provider="anthropic"),
                    TextBlock(text="calling"),
                    ToolCall(id="a", name="t", arguments={}, signature="sig2", provider="google"),
                ),
            ),
            r("a"),
        ],
        None,
    ),
    "row-4": (lambda: [A("a"), r("a")], None),
    "row-5": (lambda: [A("a", "b"), r("a"), r("b")], None),
    "row-6": (
        lambda: [
            Message(role="assistant", content=(call("a", "n1"), call("b", "n2"))),
            r("b", "n2"),
            r("a", "n1"),
        ],
        None,
    ),
    "row-7": (lambda: [A("a", "b"), r(""), r("b")], None),
    "row-8": (lambda: [A("a", ""), r("a"), r("a")], None),
    "row-9": (lambda: [A("", ""), r(""), r("")], None),
    "row-10": (lambda: [A("a", "a")], (0, 'duplicate tool call ID "a"')),
    "row-11": (lambda: [A("1", "2"), r("1"), r("1")], (2, "duplicate or unmatched tool result")),
    "row-12": (
        lambda: [A("a", "b"), r("a"), user()],
        (2, "non-tool message before tool-call group completed"),
    ),
    "row-13": (lambda: [A("a", "b"), r("a")], (0, "tool-call group has an incomplete suffix")),
    "row-14": (lambda: [r("a")], (0, "orphan tool result")),
    "row-15": (lambda: [A("a"), r("a"), r("a")], (2, "orphan tool result")),
    "row-16": (
        lambda: [Message(role="user", content=(call("a"),))],
        (0, "tool calls require the assistant role"),
    ),
    "row-17": (
        lambda: [Message(role="assistant", content=(ToolResult(tool_call_id="a"),))],
        (0, "tool results require the tool role"),
    ),
    "row-18": (
        lambda: [A("a"), Message(role="tool", content=(TextBlock(text="no result"),))],
        (1, "tool message has no result"),
    ),
    "row-19": (
        lambda: [A("a"), Message(role="tool", content=(call("a"),))],
        (1, "tool calls require the assistant role"),
    ),
    "row-20": (lambda: [A("a", ""), r("zzz"), r("a")], None),
    "row-21": (lambda: [A("a", "b"), r("zzz"), r("b")], (1, "duplicate or unmatched tool result")),
    "row-22": (lambda: [A("a"), A("b"), r("a")], (1, "tool calls require the assistant role")),
}


@pytest.mark.parametrize(("build", "expected"), list(ROWS.values()), ids=list(ROWS))
def test_validate_complete_turns_table(
    build: Callable[[], list[Message]], expected: tuple[int, str] | None
) -> None:
    history = build()
    if expected is None:
        validate_complete_turns(history)
        return
    index, reason = expected
    with pytest.raises(IncompleteToolTurnError) as info:
        validate_complete_turns(history)
    err = info.value
    assert isinstance(err, IncompleteToolTurnError)
    assert isinstance(err, ValueError)
    assert err.index == index
    assert reason in err.reason
    assert str(err) == f"message: incomplete tool turn: message {index}: {err.reason}"


def test_table_has_every_row() -> None:
    assert list(ROWS) == [f"row-{n}" for n in range(1, 23)]


def test_results_match_by_id_never_by_name() -> None:
    # Names swapped relative to the calls: still fine, because matching is by ID.
    calls = Message(role="assistant", content=(call("a", "n1"), call("b", "n2")))
    validate_complete_turns([calls, r("b", "n1"), r("a", "n2")])
    # The right names but an ID that matches no call: rejected.
    with pytest.raises(IncompleteToolTurnError) as info:
        validate_complete_turns([calls, r("x", "n1"), r("b", "n2")])
    assert info.value.index == 1
    assert info.value.reason == "duplicate or unmatched tool result"


def test_assistant_may_carry_text_and_calls() -> None:
    msg = Message(role="assistant", content=(TextBlock(text="let me check"), call("a")))
    validate_complete_turns([user(), msg, r("a"), assistant("done")])


def test_empty_result_id_takes_first_unmatched_call() -> None:
    # r "" takes a; r a then falls back to the empty-ID call.
    validate_complete_turns([A("a", ""), r(""), r("a")])
    # r "" takes the empty-ID call (the first unmatched); r zzz then has nowhere to go.
    with pytest.raises(IncompleteToolTurnError) as info:
        validate_complete_turns([A("", "a"), r(""), r("zzz")])
    assert info.value.index == 2


def test_validation_accepts_any_sequence() -> None:
    validate_complete_turns((A("a"), r("a")))


# --- §9 table --------------------------------------------------------------------------------


def older() -> list[Message]:
    return [system(), A("c1", "c2"), r("c1"), r("c2"), user(), assistant()]


def newest() -> list[Message]:
    return [system(), user(), A("c1", "c2"), r("c1"), r("c2")]


def h() -> list[Message]:
    return [user(), A("a", "b"), r("a"), r("b"), user(), A("c"), r("c")]


HISTORIES: dict[str, Callable[[], list[Message]]] = {
    "empty": lambda: [],
    "plain": lambda: [system(), user(), assistant()],
    "older": older,
    "newest": newest,
    "h": h,
    "single": lambda: [A("a"), r("a")],
}

BOUNDARY_CASES: list[tuple[str, int, int]] = [
    ("empty", -3, 0),
    ("empty", 3, 0),
    ("plain", 2, 2),
    ("older", 1, 1),
    ("older", 4, 4),
    ("older", 2, 4),
    ("older", 3, 4),
    ("newest", 4, 2),
    ("newest", 3, 2),
    ("h", -1, 0),
    ("h", 0, 0),
    ("h", 1, 1),
    ("h", 2, 4),
    ("h", 3, 4),
    ("h", 4, 4),
    ("h", 5, 5),
    ("h", 6, 5),
    ("h", 7, 7),
    ("h", 8, 7),
    ("single", 0, 0),
    ("single", 1, 0),
    ("single", 2, 2),
]


@pytest.mark.parametrize(
    ("history", "preferred", "expected"),
    BOUNDARY_CASES,
    ids=[f"{name}:{p}->{s}" for name, p, s in BOUNDARY_CASES],
)
def test_complete_turn_boundary_table(history: str, preferred: int, expected: int) -> None:
    msgs = HISTORIES[history]()
    start = complete_turn_boundary(msgs, preferred)
    assert start == expected
    validate_complete_turns(msgs[:start])
    validate_complete_turns(msgs[start:])


def test_complete_turn_boundary_invalid_history_raises() -> None:
    with pytest.raises(IncompleteToolTurnError) as info:
        complete_turn_boundary([A("c1")], -1)
    err = info.value
    assert isinstance(err, IncompleteToolTurnError)
    assert err.index == 0
    assert "tool-call group has an incomplete suffix" in err.reason


@pytest.mark.parametrize("preferred", [-100, 0, 1, 100])
def test_complete_turn_boundary_validates_before_clamping(preferred: int) -> None:
    with pytest.raises(IncompleteToolTurnError):
        complete_turn_boundary([user(), r("orphan")], preferred)


# --- shared_view -----------------------------------------------------------------------------


def test_shared_view_removes_private_tool_group() -> None:
    history = [
        system(),
        user(),
        A("a", "b", visibility="private"),
        r("a"),
        r("b"),
        user("after"),
        A("c"),
        r("c"),
        assistant("done"),
    ]
    view = shared_view(history)
    assert view == [history[0], history[1], history[5], history[6], history[7], history[8]]
    validate_complete_turns(view)


def test_shared_view_tool_messages_follow_their_call() -> None:
    # A private tool message answering a shared call is kept; a shared one answering a private
    # call is removed: tool messages take the visibility of the message that issued the call.
    history = [
        A("a"),
        r("a", visibility="private"),
        A("b", visibility="private"),
        r("b", visibility="shared"),
    ]
    view = shared_view(history)
    assert view == [history[0], history[1]]
    validate_complete_turns(view)


def test_shared_view_removes_private_plain_messages() -> None:
    history = [
        system(),
        user("secret", visibility="private"),
        assistant("private answer", visibility="private"),
        user("public"),
        assistant("public answer"),
    ]
    view = shared_view(history)
    assert view == [history[0], history[3], history[4]]
    assert all(m.visibility == "shared" for m in view)
    validate_complete_turns(view)


def test_shared_view_of_all_shared_is_identity() -> None:
    history = h()
    assert shared_view(history) == history


def test_shared_view_empty() -> None:
    empty: Sequence[Message] = ()
    assert shared_view(empty) == []


def test_shared_view_interleaved_private_groups() -> None:
    history = [
        user(),
        A("a", visibility="private"),
        r("a"),
        A("b"),
        r("b"),
        A("c", "d", visibility="private"),
        r("d"),
        r("c"),
        user("end"),
    ]
    view = shared_view(history)
    assert view == [history[0], history[3], history[4], history[8]]
    validate_complete_turns(history)
    validate_complete_turns(view)
