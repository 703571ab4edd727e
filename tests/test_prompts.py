"""dive.prompts: literal templates, the binders, the single-pass build and its limits.

The injection tests bind placeholder syntax and closing tags through every binder (and
through nested prompts) and check that the output shows them as text. Property tests cover
the pure parts: parse and build against a reference model, and each encoder's round trip.
"""

from __future__ import annotations

import copy
import json
import pickle
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from typing import Any, LiteralString, cast

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from dive.errors import PromptError, UserError
from dive.prompts import Bindable, NoBindings, Prompt

MiB = 1024 * 1024


def lit(text: str) -> LiteralString:
    """Data as a ``LiteralString``, for tests that check how literal values render."""
    return cast(LiteralString, text)


def raises(match: str | None = None) -> pytest.RaisesExc[PromptError]:
    return pytest.raises(PromptError, match=match)


def message(excinfo: pytest.ExceptionInfo[PromptError]) -> str:
    return str(excinfo.value)


class User(BaseModel):
    name: str
    tags: list[str] = []


# --- templates ---------------------------------------------------------------------------------


def test_a_template_without_placeholders_builds_to_itself() -> None:
    assert Prompt("Just text.").build() == "Just text."
    assert Prompt("").build() == ""


def test_placeholder_whitespace_is_trimmed_and_names_are_listed_in_order() -> None:
    p = Prompt("{{  b\t}} {{a}} {{\nb }}")
    assert p.placeholders == ("b", "a")
    assert p.unbound == ("b", "a")
    assert p.bind_literal("a", "A").bind_literal("b", "B").build() == "B A B"


def test_a_name_may_occur_several_times() -> None:
    p = Prompt("{{x}}-{{x}}-{{ x }}").bind_literal("x", "7")
    assert p.build() == "7-7-7"


def test_lone_braces_are_literal() -> None:
    template = "a { b } c }} d {x} {y}} }}{ {"
    assert Prompt(template).build() == template
    assert Prompt("{{a}}}").bind_literal("a", "1").build() == "1}"
    assert Prompt("{x{{a}}}}}").bind_literal("a", "1").build() == "{x1}}}"


@pytest.mark.parametrize(
    "template",
    [
        "{{}}",
        "{{ }}",
        "{{a-b}}",
        "{{a.b}}",
        "{{{{x}}}}",
        "{{{x}}}",
        "{{1a}}",
        "{{_a}}",
        "{{a b}}",
        "{{é}}",
        "ok {{a}} then {{b",
        "unclosed {{",
        "{{a}",
    ],
)
def test_malformed_placeholders_raise_at_construction(template: LiteralString) -> None:
    with pytest.raises(PromptError):
        Prompt(template)


def test_parse_error_messages_say_where_and_what_to_do() -> None:
    with raises() as empty:
        Prompt("ab {{}}")
    assert message(empty) == (
        "empty placeholder '{{}}' at offset 3 of the template: a name starts with an ASCII "
        "letter and has only letters, digits and '_' (like {{user_name}}); rename it, or to "
        "write '{{' as text, bind it as a value: Prompt('{{open}}x}}').bind_literal('open', "
        "'{{')"
    )
    with raises() as bad:
        Prompt("{{a-b}}")
    assert message(bad).startswith("invalid placeholder name '{{a-b}}' at offset 0")
    with raises() as nested:
        Prompt("{{{{x}}}}")
    assert message(nested).startswith("invalid placeholder name '{{{{x}}' at offset 0")
    with raises() as unclosed:
        Prompt("x {{name")
    assert message(unclosed) == (
        "unclosed placeholder at offset 2 of the template: '{{' has no matching '}}'; close "
        "it, like {{name}}, or to write '{{' as text, bind it as a value: "
        "Prompt('{{open}}x}}').bind_literal('open', '{{')"
    )
    with raises() as long:
        Prompt(lit("{{" + "a" * 100 + "-}}"))
    assert "'{{aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'" in message(long)


def test_the_literal_braces_advice_works() -> None:
    assert Prompt("{{open}}x}}").bind_literal("open", "{{").build() == "{{x}}"


@pytest.mark.parametrize("template", [b"{{a}}", None, 3, type("S", (str,), {})("text")])
def test_a_template_must_be_exactly_str(template: object) -> None:
    with raises() as excinfo:
        Prompt(cast(Any, template))
    assert message(excinfo).startswith(
        f"Prompt() needs a template of type str, got {type(template).__name__}; write the "
        "template as a string literal"
    )


def test_prompt_error_is_a_user_error_in_the_error_tree() -> None:
    import dive.errors

    assert issubclass(PromptError, UserError)
    assert issubclass(PromptError, ValueError)
    assert "PromptError" in (dive.errors.__doc__ or "")


def test_repr_shows_the_template_and_bound_names_but_no_values() -> None:
    p = Prompt("Hi {{name}} {{x}}").bind_literal("name", "secret-value")
    assert repr(p) == "Prompt('Hi {{name}} {{x}}', bound=['name'])"
    assert repr(Prompt(lit("x" * 100))) == f"Prompt({'x' * 57 + '...'!r}, bound=[])"


# --- names -------------------------------------------------------------------------------------


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with raises() as excinfo:
        Prompt("{{a}} {{b}}").bind_literal("c", "x")
    assert message(excinfo) == (
        "binding 'c' not found in template\n"
        "Its placeholders are: a, b. Check the name, or add {{c}} to the template."
    )
    with raises() as none:
        Prompt("plain").bind_json("c", 1)
    assert message(none) == (
        "binding 'c' not found in template\n"
        "It has no placeholders. Check the name, or add {{c}} to the template."
    )


def test_a_second_binding_is_refused() -> None:
    p = Prompt("{{a}}").bind_literal("a", "1")
    with raises() as excinfo:
        p.bind_json("a", 2)
    assert message(excinfo) == (
        "binding 'a' already bound\n"
        "Each placeholder takes one value. To use another value, bind it on the prompt from "
        "before this binding (binders return new prompts, so that one is unchanged)."
    )


BINDERS: list[Callable[[Prompt], Prompt]] = [
    lambda p: p.bind_literal("zz", "x"),
    lambda p: p.bind_json("zz", 1),
    lambda p: p.bind_xml("zz", 1, root="r"),
    lambda p: p.bind_yaml("zz", 1),
    lambda p: p.bind_unordered_list("zz", []),
    lambda p: p.bind_ordered_list("zz", []),
    lambda p: p.bind_prompt("zz", Prompt("x")),
]


@pytest.mark.parametrize("bind", BINDERS)
def test_every_binder_checks_the_name(bind: Callable[[Prompt], Prompt]) -> None:
    with raises(r"^binding 'zz' not found in template\n") as excinfo:
        bind(Prompt("{{a}}"))
    assert message(excinfo).splitlines()[0] == "binding 'zz' not found in template"


def test_a_name_must_be_a_str() -> None:
    with raises(r"^a binding name must be a str, got int"):
        Prompt("{{a}}").bind_literal(cast(Any, 1), "x")


# --- immutability -----------------------------------------------------------------------------


def test_binding_returns_a_new_prompt_and_leaves_the_original_unchanged() -> None:
    base = Prompt("{{a}}/{{b}}")
    one = base.bind_literal("a", "1")
    assert one is not base
    assert base.unbound == ("a", "b")
    assert one.unbound == ("b",)
    left = one.bind_literal("b", "left")
    right = one.bind_json("b", "right")
    assert left.build() == "1/left"
    assert right.build() == '1/"right"'
    assert one.unbound == ("b",)
    with raises(r"^unbound placeholder: a\n"):
        base.build()


def test_a_prompt_cannot_be_changed_in_place() -> None:
    p = Prompt("{{a}}")
    with pytest.raises(AttributeError, match="immutable"):
        p._bound = {}
    with pytest.raises(AttributeError, match="immutable"):
        del p._template
    with pytest.raises(AttributeError, match="immutable"):
        p.__init__("{{b}}")
    assert p.placeholders == ("a",)
    assert copy.copy(p) is p
    assert copy.deepcopy(p) is p
    assert {p, p} == {p}


def test_a_prompt_pickles() -> None:
    inner = Prompt("<{{x}}>").bind_yaml("x", [1])
    p = Prompt("{{a}} {{b}} {{c}}").bind_literal("a", "A").bind_prompt("b", inner)
    restored = pickle.loads(pickle.dumps(p))
    assert restored.unbound == ("c",)
    assert restored.bind_literal("c", "C").build() == p.bind_literal("c", "C").build()
    with raises(r"^bind_prompt\('p'\): prompts would nest 101 deep"):
        Prompt("{{p}}").bind_prompt("p", pickle.loads(pickle.dumps(_chain(100))))


def test_bound_data_is_encoded_at_bind_time() -> None:
    data = {"k": [1]}
    p = Prompt("{{d}}").bind_json("d", data)
    data["k"].append(2)
    assert json.loads(p.build()) == {"k": [1]}


# --- bind_literal ------------------------------------------------------------------------------


def test_bind_literal_is_verbatim() -> None:
    assert Prompt("<{{a}}>").bind_literal("a", " x & <y>\n ").build() == "< x & <y>\n >"


@pytest.mark.parametrize("value", [1, b"x", None, type("S", (str,), {})("x")])
def test_bind_literal_needs_a_str(value: object) -> None:
    with raises(rf"^bind_literal\('a'\) needs a str written in code, got {type(value).__name__}"):
        Prompt("{{a}}").bind_literal("a", cast(Any, value))


# --- bind_json ---------------------------------------------------------------------------------


def test_bind_json_is_json_dumps_indent_2_without_ascii_escapes() -> None:
    value: dict[str, object] = {"b": [1, 2.5, None, True], "a": "é ✓", "n": {}}
    out = Prompt("{{v}}").bind_json("v", value).build()
    assert out == json.dumps(value, indent=2, ensure_ascii=False)
    assert "é ✓" in out


def test_bind_json_dumps_pydantic_models_also_nested() -> None:
    ada = User(name="Ada", tags=["x"])
    assert Prompt("{{v}}").bind_json("v", ada).build() == json.dumps(
        {"name": "Ada", "tags": ["x"]}, indent=2
    )
    nested = {"users": [ada, (User(name="Bo"),)], "lead": ada}
    expected: dict[str, object] = {
        "users": [{"name": "Ada", "tags": ["x"]}, [{"name": "Bo", "tags": []}]],
        "lead": {"name": "Ada", "tags": ["x"]},
    }
    assert json.loads(Prompt("{{v}}").bind_json("v", nested).build()) == expected


def _circular() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    ("value", "cause", "shown"),
    [
        ({1, 2}, TypeError, "Object of type set is not JSON serializable"),
        (object(), TypeError, "Object of type object is not JSON serializable"),
        ({(1, 2): "x"}, TypeError, "keys must be"),
        (_circular(), ValueError, "Circular reference detected"),
    ],
)
def test_bind_json_failures_say_why_and_keep_the_cause(
    value: object, cause: type[Exception], shown: str
) -> None:
    with raises() as excinfo:
        Prompt("{{v}}").bind_json("v", value)
    text = message(excinfo)
    assert text.startswith("bind_json('v'): cannot encode the value as JSON (")
    assert shown in text
    assert text.endswith(
        "pass JSON-compatible data (dict with str keys, list, tuple, str, int, float, bool, "
        "None) or pydantic models"
    )
    assert isinstance(excinfo.value.__cause__, cause)


# --- bind_xml ----------------------------------------------------------------------------------


def test_bind_xml_layout() -> None:
    value: dict[str, object] = {
        "user": User(name="Ada", tags=["a", "b"]),
        "count": 3,
        "ratio": 0.5,
        "ok": True,
        "off": False,
        "none": None,
        "empty_list": [],
        "empty_map": {},
        "empty_text": "",
        "pair": ("x", {"deep": "y"}),
        "lines": "one\ntwo",
    }
    out = Prompt("{{v}}").bind_xml("v", value, root="request").build()
    assert out == (
        "<request>\n"
        "  <user>\n"
        "    <name>Ada</name>\n"
        "    <tags>\n"
        "      <item>a</item>\n"
        "      <item>b</item>\n"
        "    </tags>\n"
        "  </user>\n"
        "  <count>3</count>\n"
        "  <ratio>0.5</ratio>\n"
        "  <ok>true</ok>\n"
        "  <off>false</off>\n"
        "  <none/>\n"
        "  <empty_list></empty_list>\n"
        "  <empty_map></empty_map>\n"
        "  <empty_text></empty_text>\n"
        "  <pair>\n"
        "    <item>x</item>\n"
        "    <item>\n"
        "      <deep>y</deep>\n"
        "    </item>\n"
        "  </pair>\n"
        "  <lines>one\ntwo</lines>\n"
        "</request>"
    )


def test_bind_xml_scalars_at_the_root_and_escaping() -> None:
    assert Prompt("{{v}}").bind_xml("v", "a & b < c > d", root="t").build() == (
        "<t>a &amp; b &lt; c &gt; d</t>"
    )
    assert Prompt("{{v}}").bind_xml("v", 42, root="n").build() == "<n>42</n>"
    assert Prompt("{{v}}").bind_xml("v", None, root="n").build() == "<n/>"
    assert Prompt("{{v}}").bind_xml("v", ["a"], root="l").build() == "<l>\n  <item>a</item>\n</l>"


def test_bind_xml_accepts_xml_names() -> None:
    value = {"_a": 1, "b-c.d": 2, "名前": 3, "x9": 4}
    out = Prompt("{{v}}").bind_xml("v", value, root="données")
    assert ET.fromstring(out.build()).tag == "données"


@pytest.mark.parametrize("root", ["", "1abc", "a b", "ns:tag", "<x>", "a>b", "a/b", "-x"])
def test_bind_xml_refuses_an_invalid_root(root: str) -> None:
    with raises() as excinfo:
        Prompt("{{v}}").bind_xml("v", 1, root=root)
    assert message(excinfo).startswith(f"bind_xml('v'): {root!r} (root=) is not a valid XML")
    assert message(excinfo).endswith("Pass a root name like root='document'.")


@pytest.mark.parametrize("key", ["a b", "</r><evil>", "1", "x:y", ""])
def test_bind_xml_refuses_keys_that_are_not_element_names(key: str) -> None:
    with raises() as excinfo:
        Prompt("{{v}}").bind_xml("v", {"ok": {key: 1}}, root="r")
    assert message(excinfo).startswith(
        f"bind_xml('v'): {key!r} (a key at r.ok) is not a valid XML element name"
    )
    assert "Rename the key" in message(excinfo)


def test_bind_xml_refuses_non_str_keys_and_unknown_types() -> None:
    with raises(r"^bind_xml\('v'\): 1 \(a key at r\) is not a valid XML element name"):
        Prompt("{{v}}").bind_xml("v", {1: "x"}, root="r")
    with raises(r"^bind_xml\('v'\): cannot encode the set at r\.a\[1\] as XML; pass a mapping"):
        Prompt("{{v}}").bind_xml("v", {"a": [1, {2}]}, root="r")
    with raises(r"^bind_xml\('v'\): cannot encode the bytes at r as XML"):
        Prompt("{{v}}").bind_xml("v", b"raw", root="r")


def test_bind_xml_refuses_cycles_and_very_deep_values() -> None:
    with raises(r"^bind_xml\('v'\): the value at r\[0\] contains itself"):
        Prompt("{{v}}").bind_xml("v", _circular(), root="r")
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    with raises(r"^bind_xml\('v'\): the value is nested too deeply") as excinfo:
        Prompt("{{v}}").bind_xml("v", deep, root="r")
    assert isinstance(excinfo.value.__cause__, RecursionError)


def test_bind_xml_shares_no_state_between_siblings() -> None:
    shared = {"k": "v"}
    out = Prompt("{{v}}").bind_xml("v", [shared, shared], root="r").build()
    assert out.count("<k>v</k>") == 2


# --- bind_yaml ---------------------------------------------------------------------------------


def test_bind_yaml_is_safe_dump_in_insertion_order_with_unicode() -> None:
    value = {"z": 1, "a": ["é", None, True], "m": {"k": "v"}}
    out = Prompt("{{v}}").bind_yaml("v", value).build()
    assert out == yaml.safe_dump(value, sort_keys=False, allow_unicode=True)
    assert out.startswith("z: 1\n")
    assert "é" in out
    assert Prompt("{{v}}").bind_yaml("v", "hi").build() == "hi\n...\n"


def test_bind_yaml_dumps_pydantic_models() -> None:
    out = Prompt("{{v}}").bind_yaml("v", {"u": User(name="Ada", tags=["x"])}).build()
    assert out == "u:\n  name: Ada\n  tags:\n  - x\n"


def test_bind_yaml_failures_say_why_and_keep_the_cause() -> None:
    with raises() as excinfo:
        Prompt("{{v}}").bind_yaml("v", {"x": object()})
    assert message(excinfo) == (
        "bind_yaml('v'): cannot encode the value as YAML (cannot represent an object of "
        "type object); pass plain data (dict, list, str, int, float, bool, None, dates) or "
        "pydantic models"
    )
    assert isinstance(excinfo.value.__cause__, yaml.YAMLError)


# --- list binders ------------------------------------------------------------------------------


def test_list_binders() -> None:
    p = Prompt("{{u}}|{{o}}")
    items = ["first", "second", "third"]
    out = p.bind_unordered_list("u", items).bind_ordered_list("o", items).build()
    assert out == "- first\n- second\n- third|1. first\n2. second\n3. third"


def test_list_binders_render_no_items_as_empty_text() -> None:
    out = Prompt("[{{u}}][{{o}}]").bind_unordered_list("u", []).bind_ordered_list("o", ())
    assert out.build() == "[][]"


def test_list_binders_take_any_iterable_once() -> None:
    def gen() -> Iterator[str]:
        yield "a"
        yield "b"

    assert Prompt("{{o}}").bind_ordered_list("o", gen()).build() == "1. a\n2. b"
    numbers = [f"n{i}" for i in range(10)]
    assert Prompt("{{o}}").bind_ordered_list("o", numbers).build().endswith("\n10. n9")


@pytest.mark.parametrize("brk", ["\n", "\r", "\v", "\f", "\x85", "\u2028", "\u2029"])
@pytest.mark.parametrize("binder", ["bind_unordered_list", "bind_ordered_list"])
def test_list_items_with_line_breaks_are_refused(binder: str, brk: str) -> None:
    with raises() as excinfo:
        getattr(Prompt("{{l}}"), binder)("l", ["fine", f"bad{brk}item"])
    assert message(excinfo) == (
        f"{binder}('l'): items[1] contains a line break ({brk!r}); an item must be one line: "
        "split it into several items, or bind multi-line data with bind_json, bind_xml or "
        "bind_yaml"
    )


def test_list_items_must_be_str_and_items_not_a_str() -> None:
    with raises(r"^bind_unordered_list\('l'\): items\[0\] is of type int, not str"):
        Prompt("{{l}}").bind_unordered_list("l", cast(Any, [1]))
    with raises(r"^bind_ordered_list\('l'\): items must be an iterable of str, got str"):
        Prompt("{{l}}").bind_ordered_list("l", "abc")


def test_list_items_may_hold_other_control_characters() -> None:
    out = Prompt("{{l}}").bind_unordered_list("l", ["a\tb", "c\x1ed"]).build()
    assert out == "- a\tb\n- c\x1ed"


# --- bind_prompt -------------------------------------------------------------------------------


def test_bind_prompt_inserts_the_nested_build() -> None:
    inner = Prompt("<{{x}}>").bind_literal("x", "in")
    outer = Prompt("a {{p}} b {{p}}").bind_prompt("p", inner)
    assert outer.build() == "a <in> b <in>"


def test_bind_prompt_refuses_a_prompt_with_unbound_placeholders() -> None:
    with raises() as excinfo:
        Prompt("{{p}}").bind_prompt("p", Prompt("{{x}} {{y}}"))
    assert message(excinfo) == (
        "bind_prompt('p'): unbound placeholder in the nested prompt: x, y; bind it on that "
        "prompt before binding the prompt here"
    )


def test_bind_prompt_needs_a_prompt() -> None:
    with raises(r"^bind_prompt\('p'\) needs a Prompt, got str"):
        Prompt("{{p}}").bind_prompt("p", cast(Any, "text"))


def _chain(levels: int) -> Prompt:
    p = Prompt("leaf")
    for _ in range(levels):
        p = Prompt("({{p}})").bind_prompt("p", p)
    return p


def test_nesting_is_capped_at_100() -> None:
    deepest = _chain(100)
    assert deepest.build() == "(" * 100 + "leaf" + ")" * 100
    with raises() as excinfo:
        Prompt("{{p}}").bind_prompt("p", deepest)
    assert message(excinfo) == (
        "bind_prompt('p'): prompts would nest 101 deep, more than 100; flatten the nesting, "
        "for example by building the inner prompts into fewer levels"
    )
    shallow = _chain(3)
    both = Prompt("{{a}}{{b}}").bind_prompt("a", _chain(99)).bind_prompt("b", shallow)
    with raises("nest 101 deep"):
        Prompt("{{p}}").bind_prompt("p", both)


def test_each_distinct_nested_prompt_is_built_once_per_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    original = Prompt._render

    def counting(self: Prompt, built: dict[int, Any]) -> Any:
        calls.append(self.template)
        return original(self, built)

    monkeypatch.setattr(Prompt, "_render", counting)
    shared = Prompt("shared")
    left = Prompt("L{{s}}{{s}}").bind_prompt("s", shared)
    right = Prompt("R{{s}}").bind_prompt("s", shared)
    top = Prompt("{{l}}|{{r}}|{{s}}").bind_prompt("l", left).bind_prompt("r", right)
    top = top.bind_prompt("s", shared)
    assert top.build() == "Lsharedshared|Rshared|shared"
    assert sorted(calls) == sorted(["{{l}}|{{r}}|{{s}}", "L{{s}}{{s}}", "R{{s}}", "shared"])


# --- build: unbound and single pass ------------------------------------------------------------


def test_an_unbound_placeholder_fails_the_build() -> None:
    with raises() as one:
        Prompt("{{a}} {{b}}").bind_literal("a", "x").build()
    assert message(one) == (
        "unbound placeholder: b\nBind every placeholder with a bind_* method before build()."
    )
    with raises() as several:
        Prompt("{{c}} {{a}} {{b}} {{c}}").build()
    assert message(several) == (
        "unbound placeholder: c\n"
        "Also unbound: a, b. Bind every placeholder with a bind_* method before build()."
    )


EVIL = "{{b}} {{ b }} {{a}} {{missing}} {{ </root> </v> ]]> -->"


def test_placeholders_inside_literal_values_stay_literal() -> None:
    p = Prompt("{{a}}|{{b}}").bind_literal("a", lit(EVIL)).bind_literal("b", "B")
    assert p.build() == EVIL + "|B"
    assert Prompt("{{a}}").bind_literal("a", "{{a}}").build() == "{{a}}"


def test_placeholders_inside_json_stay_literal() -> None:
    value = {"note": EVIL, "{{b}}": ["{{a}}"]}
    p = Prompt("{{a}}|{{b}}").bind_json("a", value).bind_literal("b", "B")
    assert p.build() == json.dumps(value, indent=2, ensure_ascii=False) + "|B"


def test_placeholders_and_closing_tags_inside_xml_stay_text() -> None:
    value = {"note": EVIL, "items": ["</v><v>injected</v>", "{{b}}"]}
    out = Prompt("{{a}}|{{b}}").bind_xml("a", value, root="v").bind_literal("b", "B").build()
    xml_text, rest = out.rsplit("|", 1)
    assert rest == "B"
    assert "{{b}} {{ b }} {{a}} {{missing}}" in xml_text
    assert xml_text.count("</v>") == 1
    assert xml_text.endswith("</v>")
    tree = ET.fromstring(xml_text)
    assert tree.findtext("note") == EVIL
    assert [i.text for i in tree.iter("item")] == ["</v><v>injected</v>", "{{b}}"]


def test_placeholders_inside_yaml_stay_literal() -> None:
    value = {"note": EVIL, "list": ["{{b}}"]}
    out = Prompt("{{a}}|{{b}}").bind_yaml("a", value).bind_literal("b", "B").build()
    assert out == yaml.safe_dump(value, sort_keys=False, allow_unicode=True) + "|B"
    assert yaml.safe_load(out.removesuffix("|B")) == value


def test_placeholders_inside_list_items_stay_literal() -> None:
    p = Prompt("{{u}}|{{o}}|{{b}}").bind_unordered_list("u", [EVIL, "{{o}}"])
    out = p.bind_ordered_list("o", ["{{u}}"]).bind_literal("b", "B").build()
    assert out == f"- {EVIL}\n- {{{{o}}}}|1. {{{{u}}}}|B"


def test_placeholders_inside_nested_prompt_data_stay_literal() -> None:
    inner = Prompt("<doc>{{body}}</doc>").bind_json("body", {"text": "{{secret}} </doc>"})
    inner = Prompt("[{{i}} {{x}}]").bind_prompt("i", inner).bind_literal("x", "{{secret}}")
    outer = Prompt("{{i}} {{secret}}").bind_prompt("i", inner).bind_literal("secret", "S")
    body = json.dumps({"text": "{{secret}} </doc>"}, indent=2)
    assert outer.build() == f"[<doc>{body}</doc> {{{{secret}}}}] S"


def test_a_nested_template_placeholder_named_like_an_outer_one_is_independent() -> None:
    inner = Prompt("in:{{name}}").bind_literal("name", "inner")
    outer = Prompt("{{name}}/{{inner}}").bind_literal("name", "outer").bind_prompt("inner", inner)
    assert outer.build() == "outer/in:inner"


# --- the 64 MiB limit --------------------------------------------------------------------------


def test_output_over_64_mib_is_refused_counting_each_occurrence() -> None:
    big = Prompt("{{v}}{{v}}").bind_literal("v", lit("x" * (33 * MiB)))
    with raises() as excinfo:
        big.build()
    assert message(excinfo) == (
        f"the prompt would be {66 * MiB} bytes of UTF-8, over the 64 MiB limit ({64 * MiB} "
        "bytes; a value counts once per occurrence); bind less data, or send large documents "
        "as attachments rather than prompt text"
    )


def test_exactly_64_mib_is_allowed() -> None:
    half = "y" * (32 * MiB - 1)
    p = Prompt("{{v}}a{{v}}b").bind_literal("v", lit(half))
    assert len(p.build()) == 64 * MiB
    with raises("over the 64 MiB limit"):
        Prompt("{{v}}ab{{v}}b").bind_literal("v", lit(half)).build()


def test_the_limit_counts_utf8_bytes() -> None:
    wide = "é" * (16 * MiB + 1)  # 32 MiB + 2 bytes of UTF-8, half as many characters
    with raises(f"would be {64 * MiB + 4} bytes"):
        Prompt("{{v}}{{v}}").bind_literal("v", lit(wide)).build()


def test_the_limit_counts_nested_prompts_per_occurrence() -> None:
    inner = Prompt("{{v}}").bind_literal("v", lit("z" * (22 * MiB)))
    assert len(Prompt("{{p}}{{p}}").bind_prompt("p", inner).build()) == 44 * MiB
    with raises(f"would be {66 * MiB} bytes"):
        Prompt("{{p}}{{p}}{{p}}").bind_prompt("p", inner).build()


# --- Bindable ------------------------------------------------------------------------------------


class Ticket(BaseModel):
    title: str
    labels: list[str]

    def bind(self, prompt: Prompt) -> Prompt:
        return prompt.bind_json("title", self.title).bind_unordered_list("labels", self.labels)


def test_a_request_type_binds_itself() -> None:
    ticket = Ticket(title="Crash {{labels}}", labels=["bug", "p1"])
    assert isinstance(ticket, Bindable)
    request: Bindable = ticket
    out = request.bind(Prompt("Title: {{title}}\nLabels:\n{{labels}}")).build()
    assert out == 'Title: "Crash {{labels}}"\nLabels:\n- bug\n- p1'


def test_no_bindings_returns_the_prompt_as_is() -> None:
    p = Prompt("System text.")
    assert NoBindings().bind(p) is p
    assert isinstance(NoBindings(), Bindable)
    assert NoBindings() == NoBindings()


# --- properties --------------------------------------------------------------------------------

plain_text = st.text().filter(lambda t: "{{" not in t)
names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,6}", fullmatch=True)
spaces = st.sampled_from(["", " ", "  ", "\t", "\n "])


@given(plain_text)
def test_text_without_open_braces_builds_to_itself(text: str) -> None:
    assert Prompt(lit(text)).build() == text


@given(st.text())
def test_a_literal_value_comes_out_exactly(value: str) -> None:
    assert Prompt("{{a}}").bind_literal("a", lit(value)).build() == value


@given(st.text(), st.text())
def test_values_are_never_rescanned(a: str, b: str) -> None:
    p = Prompt("{{a}}|{{b}}").bind_literal("a", lit(a)).bind_literal("b", lit(b))
    assert p.build() == f"{a}|{b}"


@st.composite
def templates(draw: st.DrawFn) -> tuple[str, list[str], dict[str, str], str]:
    """A template of text chunks and placeholders, values for its names, and its output."""
    chunk = plain_text.filter(lambda t: not t.endswith("{"))
    count = draw(st.integers(min_value=0, max_value=5))
    pool = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    values = {name: draw(st.text(max_size=20)) for name in pool}
    template = draw(chunk)
    expected = template
    used: list[str] = []
    for _ in range(count):
        name = draw(st.sampled_from(pool))
        text = draw(chunk)
        template += "{{" + draw(spaces) + name + draw(spaces) + "}}" + text
        expected += values[name] + text
        used.append(name)
    return template, used, values, expected


@given(templates())
def test_build_matches_a_reference_model(case: tuple[str, list[str], dict[str, str], str]) -> None:
    template, used, values, expected = case
    p = Prompt(lit(template))
    assert p.placeholders == tuple(dict.fromkeys(used))
    for name in p.placeholders:
        p = p.bind_literal(name, lit(values[name]))
    assert p.build() == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_bind_json_round_trips(value: object) -> None:
    assert json.loads(Prompt("{{v}}").bind_json("v", value).build()) == value


# PyYAML writes NEL and the Unicode line separators raw under allow_unicode=True and reads
# them back as line breaks, so the round trip holds for text without them.
yaml_text = st.text(st.characters(blacklist_characters="\x85\u2028\u2029"))
yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | yaml_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(yaml_text, children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_bind_yaml_is_safe_dump(value: object) -> None:
    out = Prompt("{{v}}").bind_yaml("v", value).build()
    assert out == yaml.safe_dump(value, sort_keys=False, allow_unicode=True)


@given(yaml_values)
def test_bind_yaml_round_trips(value: object) -> None:
    assert yaml.safe_load(Prompt("{{v}}").bind_yaml("v", value).build()) == value


xml_chars = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff")
xml_text = st.lists(
    st.text(xml_chars, max_size=4) | st.sampled_from(["\n", "\t", "<", ">", "&", "</r>", "{{v}}"]),
    max_size=4,
).map("".join)
xml_keys = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,6}", fullmatch=True)
xml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | xml_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(xml_keys, children, max_size=3)
    ),
    max_leaves=12,
)


def _shape(value: object) -> object:
    """What ``value`` looks like as parsed XML: text, or a list of (tag, shape)."""
    if value is None or value == [] or value == {}:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in cast(dict[str, object], value).items()]
    return [("item", _shape(v)) for v in cast(list[object], value)]


def _parsed(element: ET.Element) -> object:
    if len(element):
        return [(child.tag, _parsed(child)) for child in element]
    return element.text or ""


@given(xml_values)
def test_bind_xml_is_well_formed_and_keeps_every_text(value: object) -> None:
    out = Prompt("{{v}}").bind_xml("v", value, root="r").build()
    tree = ET.fromstring(out)
    assert tree.tag == "r"
    assert _parsed(tree) == _shape(value)


single_lines = st.lists(
    st.text().filter(lambda t: not any(c in t for c in "\n\r\v\f\x85\u2028\u2029")), max_size=8
)


@given(single_lines)
def test_list_binders_write_one_line_per_item(items: list[str]) -> None:
    unordered = Prompt("{{l}}").bind_unordered_list("l", items).build()
    ordered = Prompt("{{l}}").bind_ordered_list("l", items).build()
    if not items:
        assert unordered == ordered == ""
        return
    assert unordered.split("\n") == [f"- {item}" for item in items]
    assert ordered.split("\n") == [f"{i}. {item}" for i, item in enumerate(items, start=1)]
