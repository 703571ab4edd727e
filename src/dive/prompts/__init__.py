"""Prompts: literal templates, typed binders, and a build that never rescans data.

A :class:`Prompt` is made from a string literal with ``{{name}}`` placeholders (pyright
rejects a template that is not a ``LiteralString``). Data enters only through binders, each
of which encodes one value for one name and returns a new prompt::

    prompt = (
        Prompt("Summarize for {{user}}: {{doc}}")
        .bind_literal("user", "the on-call engineer")
        .bind_xml("doc", {"title": title, "body": body}, root="document")
    )
    text = prompt.build()

``build()`` walks the template once and writes each value verbatim, so ``{{...}}`` or a
closing tag inside bound data is text, never a placeholder or markup. A request type that
implements :class:`Bindable` binds itself into a prompt; :class:`NoBindings` binds nothing.
Every failure is a :class:`dive.errors.PromptError`. See ``docs/prompts.md``.
"""

from dive.prompts._bindable import Bindable, NoBindings
from dive.prompts._prompt import Prompt

__all__ = ["Bindable", "NoBindings", "Prompt"]

from dive._public import publish as _publish

_publish(__name__, globals(), __all__)
