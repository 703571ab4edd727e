"""``Prompt``: a literal template, its bound values, and the one-pass build.

Binding encodes a value once, at bind time, and returns a new prompt; the original never
changes. ``build()`` walks the parsed template (literal text and names) once and writes each
bound value verbatim. It never scans a value, so ``{{evil}}`` or ``</root>`` inside bound data
is text in the output, whatever binder put it there and however deep the prompt it sits in.

A nested prompt (``bind_prompt``) must be fully bound when it is bound; it is rendered during
the outer build, once per build however often it occurs. Prompts can only nest prompts that
already exist, so nesting has no cycles; its depth is capped at ``MAX_DEPTH``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, LiteralString, final

from dive.errors import PromptError
from dive.prompts._encode import encode_json, encode_list, encode_yaml
from dive.prompts._template import MAX_OUTPUT_BYTES, Template, parse, utf8_size
from dive.prompts._xml import encode_xml

__all__ = ["MAX_DEPTH", "Prompt"]

MAX_DEPTH = 100
"""How deep prompts may nest through ``bind_prompt`` (a prompt without nested ones is 0)."""

_REPR_SHOWN = 60


@dataclass(frozen=True, slots=True)
class _Text:
    """An encoded value and its UTF-8 size."""

    text: str
    size: int


def _text(text: str) -> _Text:
    return _Text(text=text, size=utf8_size(text))


@final
class Prompt:
    """A prompt template whose data enters only through typed binders.

    The template is a string literal (``LiteralString``): text written in code, never data.
    ``{{name}}`` marks a placeholder. Each ``bind_*`` method encodes one value for one name
    and returns a new ``Prompt``; ``build()`` renders the text. See ``docs/prompts.md``.

    Args:
        template: the template text, with ``{{name}}`` placeholders.

    Raises:
        PromptError: ``template`` is not a ``str`` or has a malformed placeholder.
    """

    __slots__ = ("_bound", "_depth", "_parsed", "_template")

    _template: str
    _parsed: Template
    _bound: dict[str, _Text | Prompt]
    _depth: int

    def __init__(self, template: LiteralString) -> None:
        if type(template) is not str:
            raise PromptError(
                f"Prompt() needs a template of type str, got {type(template).__name__}; write "
                "the template as a string literal in code and bind data into it with the "
                "bind_* methods"
            )
        self._init(template, parse(template), {}, 0)

    def _init(
        self, template: str, parsed: Template, bound: dict[str, _Text | Prompt], depth: int
    ) -> None:
        if hasattr(self, "_parsed"):
            raise AttributeError("Prompt is immutable: it cannot be initialized twice")
        object.__setattr__(self, "_template", template)
        object.__setattr__(self, "_parsed", parsed)
        object.__setattr__(self, "_bound", bound)
        object.__setattr__(self, "_depth", depth)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"Prompt is immutable (cannot set {name!r}); the bind_* methods return a new prompt"
        )

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Prompt is immutable (cannot delete {name!r})")

    def __copy__(self) -> Prompt:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Prompt:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Prompt._restore, (self._template, self._bound, self._depth))

    @staticmethod
    def _restore(template: str, bound: dict[str, _Text | Prompt], depth: int) -> Prompt:
        new = object.__new__(Prompt)
        new._init(template, parse(template), dict(bound), depth)
        return new

    def __repr__(self) -> str:
        shown = self._template
        if len(shown) > _REPR_SHOWN:
            shown = shown[: _REPR_SHOWN - 3] + "..."
        return f"Prompt({shown!r}, bound={sorted(self._bound)!r})"

    # --- what the prompt holds ------------------------------------------------------------

    @property
    def template(self) -> str:
        """The template text, as written."""
        return self._template

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The distinct placeholder names, in order of first occurrence."""
        return self._parsed.names

    @property
    def unbound(self) -> tuple[str, ...]:
        """The placeholder names not bound yet, in order of first occurrence."""
        return tuple(name for name in self._parsed.names if name not in self._bound)

    # --- binders ----------------------------------------------------------------------------

    def _check_name(self, name: str) -> None:
        if type(name) is not str:
            raise PromptError(
                f"a binding name must be a str, got {type(name).__name__}; pass the "
                "placeholder's name, like 'user' for {{user}}"
            )
        if name not in self._parsed.names:
            names = ", ".join(self._parsed.names)
            known = f"Its placeholders are: {names}" if names else "It has no placeholders"
            raise PromptError(
                f"binding {name!r} not found in template\n{known}. Check the name, or add "
                f"{{{{{name}}}}} to the template."
            )
        if name in self._bound:
            raise PromptError(
                f"binding {name!r} already bound\nEach placeholder takes one value. To use "
                "another value, bind it on the prompt from before this binding (binders return "
                "new prompts, so that one is unchanged)."
            )

    def _with(self, name: str, value: _Text | Prompt, depth: int) -> Prompt:
        new = object.__new__(Prompt)
        new._init(self._template, self._parsed, {**self._bound, name: value}, depth)
        return new

    def bind_literal(self, name: str, value: LiteralString) -> Prompt:
        """Bind text written in code, verbatim.

        Args:
            name: the placeholder's name.
            value: a string literal (``LiteralString``); data goes through the other binders.

        Raises:
            PromptError: the name is unknown or already bound, or ``value`` is not a ``str``.
        """
        self._check_name(name)
        if type(value) is not str:
            raise PromptError(
                f"bind_literal({name!r}) needs a str written in code, got "
                f"{type(value).__name__}; bind data with bind_json, bind_xml, bind_yaml or "
                "a list binder"
            )
        return self._with(name, _text(value), self._depth)

    def bind_json(self, name: str, value: object) -> Prompt:
        """Bind ``value`` as ``json.dumps(value, indent=2, ensure_ascii=False)``.

        Pydantic models, also inside lists and dicts, are dumped with
        ``model_dump(mode="json")``.

        Args:
            name: the placeholder to fill (``{{name}}``).
            value: JSON data, or pydantic models.

        Raises:
            PromptError: the name is unknown or already bound, or the value is not JSON data.
        """
        self._check_name(name)
        return self._with(name, _text(encode_json(f"bind_json({name!r})", value)), self._depth)

    def bind_xml(self, name: str, value: object, *, root: str) -> Prompt:
        """Bind ``value`` as the XML element ``<root>…</root>``, indented by two spaces.

        Scalars are character data (``&``, ``<`` and ``>`` escaped), mappings child elements
        named by their keys, lists and tuples repeated ``<item>`` elements, ``None`` an empty
        element; pydantic models are dumped with ``model_dump(mode="json")`` first.

        Args:
            name: the placeholder to fill (``{{name}}``).
            value: scalars, mappings, lists, tuples, None or pydantic models.
            root: the name of the enclosing element.

        Raises:
            PromptError: the name is unknown or already bound, ``root`` or a key is not an
                XML element name, or a value has no XML form.
        """
        self._check_name(name)
        text = encode_xml(f"bind_xml({name!r})", value, root)
        return self._with(name, _text(text), self._depth)

    def bind_yaml(self, name: str, value: object) -> Prompt:
        """Bind ``value`` as ``yaml.safe_dump(value, sort_keys=False, allow_unicode=True)``.

        Pydantic models are dumped with ``model_dump(mode="json")``.

        Args:
            name: the placeholder to fill (``{{name}}``).
            value: data with a safe YAML form, or pydantic models.

        Raises:
            PromptError: the name is unknown or already bound, or the value has no safe YAML
                form.
        """
        self._check_name(name)
        return self._with(name, _text(encode_yaml(f"bind_yaml({name!r})", value)), self._depth)

    def bind_unordered_list(self, name: str, items: Iterable[str]) -> Prompt:
        """Bind ``items`` as ``- item`` lines joined by newlines (no items: ``""``).

        Args:
            name: the placeholder to fill (``{{name}}``).
            items: the list items, one line each.

        Raises:
            PromptError: the name is unknown or already bound, or an item is not a ``str`` or
                contains a line break.
        """
        self._check_name(name)
        text = encode_list(f"bind_unordered_list({name!r})", items, ordered=False)
        return self._with(name, _text(text), self._depth)

    def bind_ordered_list(self, name: str, items: Iterable[str]) -> Prompt:
        """Bind ``items`` as ``1. item`` lines joined by newlines (no items: ``""``).

        Args:
            name: the placeholder to fill (``{{name}}``).
            items: the list items, one line each.

        Raises:
            PromptError: the name is unknown or already bound, or an item is not a ``str`` or
                contains a line break.
        """
        self._check_name(name)
        text = encode_list(f"bind_ordered_list({name!r})", items, ordered=True)
        return self._with(name, _text(text), self._depth)

    def bind_prompt(self, name: str, prompt: Prompt) -> Prompt:
        """Bind another prompt; its ``build()`` output takes the placeholder's place.

        Args:
            name: the placeholder's name.
            prompt: a fully bound prompt. It is built during this prompt's ``build()``, once
                however often it occurs.

        Raises:
            PromptError: the name is unknown or already bound, ``prompt`` is not a ``Prompt``
                or has unbound placeholders, or nesting would be deeper than 100.
        """
        self._check_name(name)
        label = f"bind_prompt({name!r})"
        if not isinstance(prompt, Prompt):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PromptError(
                f"{label} needs a Prompt, got {type(prompt).__name__}; bind text with "
                "bind_literal or data with bind_json, bind_xml or bind_yaml"
            )
        if missing := prompt.unbound:
            raise PromptError(
                f"{label}: unbound placeholder in the nested prompt: {', '.join(missing)}; "
                "bind it on that prompt before binding the prompt here"
            )
        depth = prompt._depth + 1
        if depth > MAX_DEPTH:
            raise PromptError(
                f"{label}: prompts would nest {depth} deep, more than {MAX_DEPTH}; flatten the "
                "nesting, for example by building the inner prompts into fewer levels"
            )
        return self._with(name, prompt, max(self._depth, depth))

    # --- build ------------------------------------------------------------------------------

    def build(self) -> str:
        """The prompt text: the template with every placeholder replaced by its value.

        The template is walked once, left to right; values are written verbatim and never
        scanned, so placeholder syntax or markup inside bound data stays text.

        Raises:
            PromptError: a placeholder is unbound, or the output would be over 64 MiB.
        """
        missing = self.unbound
        if missing:
            first, *others = missing
            rest = f"Also unbound: {', '.join(others)}. " if others else ""
            raise PromptError(
                f"unbound placeholder: {first}\n{rest}Bind every placeholder with a bind_* "
                "method before build()."
            )
        return self._render({}).text

    def _render(self, built: dict[int, _Text]) -> _Text:
        values: dict[str, _Text] = {}
        for name, value in self._bound.items():
            if isinstance(value, Prompt):
                done = built.get(id(value))
                if done is None:
                    done = built[id(value)] = value._render(built)
                values[name] = done
            else:
                values[name] = value
        parts = self._parsed.parts
        size = self._parsed.literal_size + sum(values[name].size for name in parts[1::2])
        if size > MAX_OUTPUT_BYTES:
            raise PromptError(
                f"the prompt would be {size} bytes of UTF-8, over the 64 MiB limit "
                f"({MAX_OUTPUT_BYTES} bytes; a value counts once per occurrence); bind less "
                "data, or send large documents as attachments rather than prompt text"
            )
        out = [values[part].text if i % 2 else part for i, part in enumerate(parts)]
        return _Text(text="".join(out), size=size)
