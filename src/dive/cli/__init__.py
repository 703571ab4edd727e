"""The ``dive`` command line (extra ``cli``): chat, print mode, sessions, models, the viewer.

``dive chat`` (or plain ``dive``) is an interactive chat with streamed Markdown, compact tool
calls, permission prompts and slash commands; ``dive run "prompt"`` runs one turn for
scripts (``--output-format text|json|stream-json``; exit 0 completed, 1 incomplete, 2 usage
error, 3 suspended); ``dive sessions``, ``dive models`` and ``dive serve`` look after the
rest. Settings come from flags, then the environment, then ``./.dive/settings.json``, then
``~/.dive/settings.json``; sessions live in ``~/.dive/sessions.db``. With no provider
credentials it answers through the bundled Anthropic simulator and says so on stderr. See
``docs/cli.md``. ``main`` is the console script's entry point.
"""

try:
    import prompt_toolkit as _prompt_toolkit
    import rich as _rich
    import typer as _typer
except ImportError as exc:  # pragma: no cover - depends on the install
    from dive.errors import MissingExtraError

    raise MissingExtraError(
        f"the dive command line needs the cli extra ({exc}): pip install 'dive-agents[cli]'"
    ) from exc

from dive.cli._app import app, main

del _prompt_toolkit, _rich, _typer

__all__ = ["app", "main"]

from dive._public import publish as _publish  # noqa: E402

_publish(__name__, globals(), __all__)
