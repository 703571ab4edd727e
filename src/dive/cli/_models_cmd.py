"""``dive models``: the known providers, the variables each reads, which are set here."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping

from dive.cli._console import make_console
from dive.cli._providers import OFFLINE_MODEL, choose_model, credential_of, known_providers

__all__ = ["show_models"]

_SDKS = {"anthropic": "anthropic", "google": "google.genai"}


def _sdk_missing(provider: str) -> str | None:
    module = _SDKS.get(provider, "openai")
    if importlib.util.find_spec(module.split(".")[0]) is None:
        extra = {"anthropic": "anthropic", "google": "google"}.get(provider, "openai")
        return f"pip install 'dive-agents[{extra}]'"
    return None


def show_models(environ: Mapping[str, str] | None = None) -> None:
    """Print one row per provider and the model ``dive`` would use with no ``--model``."""
    from rich.table import Table

    env = os.environ if environ is None else environ
    console = make_console()
    table = Table("provider", "credentials", "reads", "example", box=None, pad_edge=False)
    for info in known_providers():
        found = credential_of(info, env)
        if found is not None:
            state = f"yes ({found})"
        elif not info.key_required:
            state = f"local server ({info.default_base_url})"
        else:
            state = "no"
        missing = _sdk_missing(info.name)
        if missing:
            state += f"; SDK missing: {missing}"
        reads = ", ".join((*info.key_envs, info.base_url_env))
        table.add_row(info.name, state, reads, f"{info.name}:{info.example}")
    console.print(table)
    choice = choose_model(env.get("DIVE_MODEL") or None, env)
    if choice.offline:
        console.print(
            f"default: offline — the bundled Anthropic simulator answering as {OFFLINE_MODEL} "
            "(demo replies, not a real model)"
        )
    else:
        console.print(f"default: {choice.spec}")
