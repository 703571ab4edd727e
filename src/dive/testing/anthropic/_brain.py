"""``demo_brain``: a scripted stand-in that answers any request plausibly, offline.

It is **not a language model**. It is a small set of plain text patterns, there so that the
``dive`` command line and ``make demo`` do something sensible with no provider configured,
through the official SDK and the simulator's wire behaviour. Given a request body it:

1. reads the newest user text (the ask) and the tools the request offers;
2. plans the tool calls the ask plainly names, in the order it names them (at most four):

   - a command in backticks with *run*/*execute* (or a line starting ``$``) → ``Bash``;
   - arithmetic such as ``(2 + 3) * 4`` → a tool taking an ``expression`` (else it is
     computed in the answer);
   - *list* / *files* / *folder* / *directory* → ``ListDirectory`` (or a ``list…`` tool that
     needs no arguments);
   - *read* / *show* / *open* / *cat* a file name → ``Read`` (or a ``read…`` tool);
   - *write* / *create* a file name (*with* / *containing* some text) → ``Write``;
   - *grep* / *search for* / *find* a pattern → ``Grep`` (``Glob`` for a pattern with ``*``);
   - *fetch* a URL → ``WebFetch``; *ask me* → ``AskUser``;
   - any offered tool named verbatim (``mcp__notes__list_notes``), its arguments taken from
     ``key=value`` pairs in the ask (``name=todo text="buy milk"``);

3. calls the planned tools one response at a time (seeing earlier results in the history;
   a failed or refused call ends the plan), then answers with a Markdown summary of what
   they returned;
4. with no tool to call, answers in text: a greeting that says what it is, the earlier user
   messages when asked what was said before (*earlier*, *before*, *remember*, *what is my*…),
   a reply to an introduction (*my name is …*), or a plain statement that it is the offline
   simulator and what it can do.

A compaction request (a ``<transcript>`` to summarise) gets an extractive ``<summary>``: the
user's messages and the tools called, one line each, so the conversation's facts survive
``/compact`` (and a later *what did I say before?* still lists them).

With thinking requested it starts each response with a short thinking block (signed by the
simulator). Use it as a simulator ``fallback``::

    AnthropicSimulator(fallback=demo_brain)
"""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dive.testing.anthropic._request import as_dict, as_list
from dive.testing.anthropic._script import SimReply, text_block, thinking_block, tool_use_block

__all__ = ["demo_brain"]

MAX_PLANNED_CALLS = 4
_SHOWN_LINES = 12

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Call:
    at: int
    name: str
    input: Json


@dataclass(frozen=True, slots=True)
class _Done:
    name: str
    input: Json
    result: str
    is_error: bool


# --- reading the request ---------------------------------------------------------------------


def _blocks(message: Mapping[str, Any]) -> list[Json]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in (as_dict(x) for x in as_list(content) or []) if b is not None]


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    parts = [as_dict(x) or {} for x in as_list(content) or []]
    return "\n".join(str(b.get("text", "")) for b in parts if b.get("type") == "text")


def _user_texts(message: Mapping[str, Any]) -> list[str]:
    """A user message's text blocks, one each (consecutive user messages arrive merged)."""
    if message.get("role") != "user":
        return []
    texts = [str(b.get("text", "")).strip() for b in _blocks(message) if b.get("type") == "text"]
    return [t for t in texts if t and not t.startswith("<system-reminder>")]


def _said(text: str) -> list[str]:
    """What the user said, as it appears in an earlier message (a summary lists it)."""
    if "<summary>" not in text:
        return [text]
    return [line[len(_SAID) :] for line in text.splitlines() if line.startswith(_SAID)]


def _conversation(body: Mapping[str, Any]) -> tuple[str, list[str], list[_Done]]:
    """The ask, the user texts before it, and the calls made since it (with results)."""
    messages = [m for m in (as_dict(x) for x in as_list(body.get("messages")) or []) if m]
    ask_at = next((i for i in range(len(messages) - 1, -1, -1) if _user_texts(messages[i])), -1)
    if ask_at < 0:
        return "", [], []
    *before, ask = _user_texts(messages[ask_at])
    earlier = [said for m in messages[:ask_at] for text in _user_texts(m) for said in _said(text)]
    earlier += [said for text in before for said in _said(text)]
    calls: dict[str, tuple[str, Json]] = {}
    done: list[_Done] = []
    for m in messages[ask_at + 1 :]:
        for b in _blocks(m):
            if b.get("type") == "tool_use":
                calls[str(b.get("id"))] = (str(b.get("name")), as_dict(b.get("input")) or {})
            elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in calls:
                name, args = calls[str(b.get("tool_use_id"))]
                done.append(_Done(name, args, _result_text(b), bool(b.get("is_error"))))
    return ask, earlier, done


def _tools(body: Mapping[str, Any]) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for raw in as_list(body.get("tools")) or []:
        tool = as_dict(raw)
        if tool is not None and "input_schema" in tool and isinstance(tool.get("name"), str):
            out[tool["name"]] = tool
    return out


# --- planning --------------------------------------------------------------------------------


def _properties(tool: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    schema = as_dict(tool.get("input_schema")) or {}
    props = set((as_dict(schema.get("properties")) or {}).keys())
    required = {str(r) for r in as_list(schema.get("required")) or []}
    return props, required


def _pick(
    tools: Mapping[str, Json], names: Sequence[str], word: str, values: Mapping[str, Any]
) -> tuple[str, Json] | None:
    """A tool by preferred name, else one whose name contains ``word``, with its input.

    The input takes the ``values`` its schema has properties for; a tool with a required
    property no value fills is passed over.
    """
    ordered = [n for n in names if n in tools]
    ordered += [n for n in tools if word and word in n.lower() and n not in ordered]
    for name in ordered:
        props, required = _properties(tools[name])
        given = {k: v for k, v in values.items() if k in props}
        if required <= set(given):
            return name, given
    return None


_COMMAND = re.compile(r"`([^`\n]+)`")
_RUN_WORDS = re.compile(r"\b(run|execute|exec|shell|command)\b", re.I)
_MATH = re.compile(r"[\d(][\d\s.+\-*/()%^]*[\d)]")
_LIST = re.compile(r"\b(list|ls|files|folder|directory|what'?s in)\b", re.I)
_FILE = r"[`'\"]?([\w./-]*\w\.\w{1,8})[`'\"]?"
_READ = re.compile(
    r"\b(read|show|open|cat|print|look at)\b(?:\s+(?:the|file|me))*\s+" + _FILE, re.I
)
_WRITE = re.compile(r"\b(write|create|save)\b(?:\s+(?:a|the|file|to))*\s+" + _FILE, re.I)
_CONTENT = re.compile(r"\b(?:with|containing|saying)\s+(?:the\s+text\s+)?(.+)$", re.I | re.S)
_SEARCH = re.compile(r"\b(grep|search for|search|find)\s+[`'\"]?([^`'\"\s]+)", re.I)
_URL = re.compile(r"\bhttps?://[^\s`'\"<>]+")
_FETCH = re.compile(r"\b(fetch|get|download|open)\b", re.I)
_ASK = re.compile(r"\bask me\b(?:\s+(.+))?", re.I)


def _math_spans(ask: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for m in _MATH.finditer(ask):
        expr = m.group(0).strip()
        if re.search(r"[\d)]\s*[-+*/%^]\s*[-(]*\d", expr) and expr.count("(") == expr.count(")"):
            out.append((m.start(), expr))
    return out


_PAIR = re.compile(r"""\b([A-Za-z_]\w*)=(?:"([^"]*)"|'([^']*)'|([^\s,;]+))""")


def _coerce(text: str, schema: Mapping[str, Any]) -> Any:
    """``text`` as the JSON type the property's schema names (an optional's non-null one)."""
    kinds = [schema.get("type")] + [
        (as_dict(s) or {}).get("type") for s in as_list(schema.get("anyOf")) or []
    ]
    kind = next((k for k in kinds if k not in (None, "null")), "string")
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text
    if kind == "boolean":
        return text.lower() in ("true", "yes", "1")
    return text


def _named(ask: str, tools: Mapping[str, Json]) -> list[_Call]:
    """Offered tools the ask names verbatim, with the ``key=value`` pairs their schema takes."""
    pairs = {m.group(1): next(g for g in m.groups()[1:] if g is not None)
             for m in _PAIR.finditer(ask)}  # fmt: skip
    out: list[_Call] = []
    for name, tool in tools.items():
        at = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", ask)
        if at is None:
            continue
        schema = as_dict(tool.get("input_schema")) or {}
        props = as_dict(schema.get("properties")) or {}
        values = {k: _coerce(v, as_dict(props[k]) or {}) for k, v in pairs.items() if k in props}
        picked = _pick(tools, [name], "", values)
        if picked is not None:
            out.append(_Call(at.start(), *picked))
    return out


def _plan(ask: str, tools: Mapping[str, Json]) -> list[_Call]:
    found: list[_Call] = _named(ask, tools)

    def add(at: int, picked: tuple[str, Json] | None) -> None:
        if picked is not None and all(picked != (c.name, c.input) for c in found):
            found.append(_Call(at, picked[0], picked[1]))

    command = _COMMAND.search(ask)
    if command and _RUN_WORDS.search(ask):
        add(command.start(), _pick(tools, ["Bash"], "bash", {"command": command.group(1)}))
    elif ask.startswith("$ "):
        add(0, _pick(tools, ["Bash"], "bash", {"command": ask[2:].strip()}))
    for at, expr in _math_spans(ask if not command else _COMMAND.sub(" ", ask)):
        add(at, _pick(tools, ["calculate", "Calculator"], "calc", {"expression": expr}))
    if (write := _WRITE.search(ask)) is not None:
        content = _CONTENT.search(ask[write.end() :])
        body = content.group(1).strip().strip("'\"`") if content else "hello from dive"
        values = {"file_path": write.group(2), "path": write.group(2), "content": body + "\n"}
        add(write.start(), _pick(tools, ["Write"], "write", values))
    elif (read := _READ.search(ask)) is not None:
        name = read.group(2)
        values = {"file_path": name, "path": name, "name": name, "filename": name}
        add(read.start(), _pick(tools, ["Read"], "read", values))
    elif (listing := _LIST.search(ask)) is not None and not command:
        add(listing.start(), _pick(tools, ["ListDirectory"], "list", {"path": "."}))
    if (search := _SEARCH.search(ask)) is not None and not command:
        pattern = search.group(2)
        if "*" in pattern:
            add(search.start(), _pick(tools, ["Glob"], "glob", {"pattern": pattern}))
        else:
            add(search.start(), _pick(tools, ["Grep"], "grep", {"pattern": pattern}))
    if (url := _URL.search(ask)) is not None and _FETCH.search(ask):
        add(url.start(), _pick(tools, ["WebFetch"], "fetch", {"url": url.group(0).rstrip(".,)")}))
    if (question := _ASK.search(ask)) is not None:
        q = (question.group(1) or "").strip().rstrip("?.") or "How should I go on"
        add(question.start(), _pick(tools, ["AskUser"], "ask", {"question": q + "?"}))
    found.sort(key=lambda c: c.at)
    return found[:MAX_PLANNED_CALLS]


# --- answering -------------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


def _eval(node: ast.expr) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand)
    raise ValueError("not arithmetic")


def _compute(expr: str) -> str | None:
    try:
        value = _eval(ast.parse(expr.replace("^", "**"), mode="eval").body)
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, RecursionError):
        return None
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


_MEMORY = re.compile(
    r"\b(earlier|before|last time|previous(ly)?|remember|what did i|did i (say|ask)|"
    r"what('s| is) my|who am i)\b",
    re.I,
)
_INTRODUCTION = re.compile(r"\b(?:my name is|i am|i'm|call me)\s+([A-Z][\w-]*)")
_GREETING = re.compile(r"^\s*(hi|hello|hey|good (morning|afternoon|evening))\b", re.I)


def _shown(text: str) -> str:
    lines = text.rstrip().splitlines() or [""]
    shown = "\n".join(lines[:_SHOWN_LINES])
    more = len(lines) - _SHOWN_LINES
    return shown + (f"\n… ({more} more lines)" if more > 0 else "")


def _summary(done: Sequence[_Done]) -> str:
    parts: list[str] = []
    for d in done:
        args = json.dumps(d.input, ensure_ascii=False)
        label = f"**`{d.name}`** `{args if len(args) <= 80 else args[:77] + '...'}`"
        if d.is_error:
            parts.append(f"{label} did not succeed:\n\n> {_shown(d.result)}")
        elif "\n" not in d.result.strip() and len(d.result) <= 100:
            parts.append(f"{label} returned: `{d.result.strip()}`")
        else:
            parts.append(f"{label} returned:\n\n```\n{_shown(d.result)}\n```")
    return "Here is what the tools returned:\n\n" + "\n\n".join(parts)


def _memory(earlier: Sequence[str]) -> str:
    if not earlier:
        return "This is the first thing you have said in this session."
    quoted = "\n".join(f"- {t.splitlines()[0][:200]}" for t in earlier[-5:])
    return f"Earlier in this session you said:\n\n{quoted}"


def _capabilities(tools: Mapping[str, Json]) -> str:
    names = ", ".join(f"`{n}`" for n in sorted(tools)) or "none"
    return (
        "I am dive's **offline demo model**, the bundled Anthropic simulator: a few text "
        "patterns, not a language model. I can call the tools I am given when you ask plainly "
        "— *list the files*, *read README.md*, *run `ls -la`*, *what is (2 + 3) * 4*, "
        "*write notes.txt with hello*, *search for TODO*, *ask me something* — and tell you "
        f"what you said earlier. Tools I see: {names}. Set a provider key (for example "
        "`ANTHROPIC_API_KEY`) for real answers."
    )


def _answer(
    ask: str, earlier: Sequence[str], tools: Mapping[str, Json], done: Sequence[_Done]
) -> str:
    """The final text: the tools' results, then what the ask needs beyond them."""
    greeting = _GREETING.match(ask) is not None and not done
    parts = ["Hello!"] if greeting else []
    if done:
        parts.append(_summary(done))
    computed = {str(d.input.get("expression")) for d in done}
    for _, expr in _math_spans(ask):
        value = _compute(expr)
        if value is not None and expr not in computed:
            parts.append(f"`{expr}` = **{value}**")
    if _MEMORY.search(ask):
        parts.append(_memory(earlier))
    elif (name := _INTRODUCTION.search(ask)) is not None:
        parts.append(f"Nice to meet you, {name.group(1)}. Ask me later and I will remember it.")
    if not parts or greeting:
        parts.append(_capabilities(tools))
    return "\n\n".join(parts)


_SAID = "- the user said: "
_ENTRY = re.compile(r"<(user|assistant)>\n(.*?)\n</\1>", re.S)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
_TOOL_CALL = re.compile(r"^\[tool call (\S+) id=\S+\] ?(.*)$", re.M)


def _compaction(ask: str) -> str:
    """An extractive summary of a compaction request's transcript (and earlier summary)."""
    lines: list[str] = []
    for summary in _SUMMARY.findall(ask):  # earlier summaries: the request's, or a message's
        lines += [line for line in summary.splitlines() if line.startswith("- ")]
    rest = _SUMMARY.sub("", ask)
    for role, body in _ENTRY.findall(rest):
        if role == "user":
            text = "\n".join(
                line for line in body.splitlines() if not line.startswith("[tool result")
            ).strip()
            if text and not text.startswith("<system-reminder>"):
                lines.append(_SAID + text.splitlines()[0][:200])
        else:
            for name, args in _TOOL_CALL.findall(body):
                lines.append(f"- the agent called {name} {args[:120]}".rstrip())
    body = "\n".join(lines) or "- nothing of note happened yet"
    preface = "The conversation so far (an extract, not a model's summary):"
    return f"<summary>\n{preface}\n{body}\n</summary>"


def _thinking_on(body: Mapping[str, Any]) -> bool:
    thinking = as_dict(body.get("thinking"))
    return thinking is not None and thinking.get("type") in ("enabled", "adaptive")


def demo_brain(body: dict[str, Any]) -> SimReply:
    """A plausible reply to a Messages API request body (see the module docstring).

    Args:
        body: the request body, as a simulator callable receives it.
    """
    ask, earlier, done = _conversation(body)
    if "<transcript>" in ask:
        return SimReply(content=[text_block(_compaction(ask))], stop_reason="end_turn")
    tools = _tools(body)
    plan = _plan(ask, tools)
    failed = any(d.is_error for d in done)
    blocks: list[Json] = []
    if len(done) < len(plan) and not failed:
        step = plan[len(done)]
        if _thinking_on(body):
            blocks.append(thinking_block(f"The user asked: {ask[:200]!r}. I'll use {step.name}."))
        if not done:
            blocks.append(text_block(f"I'll use `{step.name}` for that."))
        blocks.append(tool_use_block(step.name, step.input))
        return SimReply(content=blocks, stop_reason="tool_use")
    answer = _answer(ask, earlier, tools, done)
    if _thinking_on(body):
        blocks.append(thinking_block(f"The user asked: {ask[:200]!r}. I can answer now."))
    blocks.append(text_block(answer))
    return SimReply(content=blocks, stop_reason="end_turn")
