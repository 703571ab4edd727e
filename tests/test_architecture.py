"""The architecture the code promises: import direction, no cycles, one owner of turn state.

These walk the source (every import statement, ``TYPE_CHECKING`` and function-level ones
included), so they fail on the commit that breaks a rule, not later.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "dive"

# What each part of dive may import (besides itself). Lower layers never import higher ones.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "redaction": set(),
    "globs": set(),
    "messages": {"errors"},
    "llm": {"errors", "messages"},
    "turns": {"errors", "messages", "llm"},
    "tools": {"errors", "messages", "llm", "turns"},
    "tracing": {"errors", "messages", "llm"},
    "sessions": {"errors", "messages", "llm", "turns"},
    "providers": {"errors", "messages", "llm", "tools", "redaction"},
    "agent": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
    },
    "prompts": {"errors"},
    "otel": {"errors", "messages", "llm", "tracing", "redaction"},
    "executor": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
        "prompts",
    },
    "toolkit": {"errors", "messages", "llm", "turns", "tools", "globs"},
    # agents as services: the A2A server and client, the AG-UI server (extra ``a2a``)
    "a2a": {"errors", "messages", "llm", "turns", "tools", "sessions", "agent"},
    "agui": {"errors", "messages", "llm", "turns", "tools", "sessions", "agent"},
    "permissions": {
        "globs",
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
    },
    "compaction": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
    },
    "skills": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
        "toolkit",
    },
    "subagents": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
        "skills",
    },
    # the web viewer over a session store, and the inbox of human waits (extra ``viewer``)
    "viewer": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
    },
    # MCP servers as toolsets (below the agent's view: tools), and as_mcp_server (an agent)
    "mcp": {"errors", "messages", "llm", "turns", "tools", "agent"},
    # durable execution on Temporal: the loop with a runner whose effects are activities
    # (extra ``temporal``; the only modules importing temporalio)
    "temporal": {"errors", "messages", "llm", "turns", "tools", "sessions", "agent"},
    # the command line sits on top: it assembles everything, nothing imports it; offline it
    # serves the bundled Anthropic simulator (dive.testing); the viewer is imported by name
    "cli": {
        "errors",
        "messages",
        "llm",
        "turns",
        "tools",
        "tracing",
        "sessions",
        "providers",
        "agent",
        "permissions",
        "compaction",
        "toolkit",
        "mcp",
        "testing",
        "viewer",
    },
}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _imports(module: str, path: Path) -> Iterator[str]:
    """Every module name ``module`` imports (absolute, ``TYPE_CHECKING`` and lazy included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            for alias in node.names:  # ``from dive.x import _y`` may import a submodule
                yield f"{target}.{alias.name}"


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "dive" or len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def test_imports_point_down() -> None:
    known = {m for m, _ in _modules()}
    problems: list[str] = []
    for module, path in _modules():
        mine = _part(module)
        if mine not in ALLOWED:
            continue  # dive/__init__ and dive.testing may use everything
        for target in _imports(module, path):
            if target not in known:
                continue
            theirs = _part(target)
            if theirs is None or theirs in (mine, "_public", "redaction", "errors"):
                continue  # dive._public (naming the public module) is a leaf every part uses
            if theirs not in ALLOWED[mine]:
                problems.append(f"{module} imports {target}")
    assert problems == []


@pytest.mark.parametrize("part", ["sessions", "providers", "tools", "turns", "messages", "llm"])
def test_lower_layers_import_nothing_from_the_agent(part: str) -> None:
    found = [
        (module, target)
        for module, path in _modules()
        if _part(module) == part
        for target in _imports(module, path)
        if target.startswith("dive.agent")
    ]
    assert found == []


def _graph(prefix: str) -> dict[str, set[str]]:
    known = {m for m, _ in _modules()}
    graph: dict[str, set[str]] = {}
    for module, path in _modules():
        if not module.startswith(prefix):
            continue
        graph[module] = {
            t for t in _imports(module, path) if t in known and t.startswith(prefix) and t != module
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


@pytest.mark.parametrize("package", ["dive.agent.", "dive.turns."])
def test_no_import_cycle_even_counting_type_checking_imports(package: str) -> None:
    assert _cycles(_graph(package)) == []


# The A2A and AG-UI SDKs (and the ASGI stack they serve on) are imported only by the packages
# that put agents behind those protocols; the viewer serves pages on the same stack.
SERVICE_SDKS: dict[str, set[str]] = {
    "a2a": {"a2a"},
    "ag_ui": {"agui"},
    "starlette": {"a2a", "agui", "viewer"},
    "uvicorn": {"viewer"},
    "jinja2": {"viewer"},
    "temporalio": {"temporal"},
}


def test_the_viewer_web_stack_stays_out_of_its_inbox_modules() -> None:
    """``dive.viewer`` imports without its extra: only the web modules import the stack.

    The package's ``__init__`` reaches ``app`` and ``serve`` through ``__getattr__`` (on use).
    """
    web = {"_app", "_pages", "_actions", "_serve"}
    found = sorted(
        module
        for module, path in _modules()
        if module.startswith("dive.viewer.") and module.rpartition(".")[2] not in web
        for target in _imports(module, path)
        if target.split(".")[0] in ("starlette", "uvicorn", "jinja2")
        or target.rpartition(".")[2] in web
    )
    assert found == []


@pytest.mark.parametrize("sdk", sorted(SERVICE_SDKS))
def test_service_sdks_are_imported_only_by_their_packages(sdk: str) -> None:
    found = sorted(
        module
        for module, path in _modules()
        for target in _imports(module, path)
        if target.split(".")[0] == sdk and _part(module) not in SERVICE_SDKS[sdk]
    )
    assert found == []


# The terminal libraries belong to the command line.
CLI_LIBRARIES = ("rich", "typer", "prompt_toolkit")


@pytest.mark.parametrize("library", CLI_LIBRARIES)
def test_terminal_libraries_are_imported_only_by_the_cli(library: str) -> None:
    found = sorted(
        module
        for module, path in _modules()
        for target in _imports(module, path)
        if target.split(".")[0] == library and _part(module) != "cli"
    )
    assert found == []


def test_nothing_imports_the_cli() -> None:
    found = sorted(
        (module, target)
        for module, path in _modules()
        if _part(module) not in ("cli", "__main__")
        for target in _imports(module, path)
        if _part(target) == "cli"
    )
    assert found == []


# --- one owner of turn and call state ----------------------------------------------------------


OWNERS = ("calls", "transcript")


def test_turn_state_has_no_settable_public_attributes() -> None:
    from dive.turns import TurnView
    from dive.turns._engine import CallLedger, OpenGroup, Transcript, TurnState

    for cls in (TurnState, Transcript, CallLedger, OpenGroup, TurnView):
        slots = [s for klass in cls.__mro__ for s in getattr(klass, "__slots__", ())]
        # a TurnState's owners are Final attributes: the ledger and the transcript
        public_slots = [s for s in slots if not s.startswith("_") and s not in OWNERS]
        assert public_slots == [], cls
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not isinstance(member, property):
                continue
            if cls is TurnView and name == "outcome":
                continue  # guarded: writable only in on_incomplete_turn
            assert member.fset is None, f"{cls.__name__}.{name} is settable"


def test_no_module_outside_turns_assigns_private_state_of_another_object() -> None:
    problems: list[str] = []
    for module, path in _modules():
        if module.startswith("dive.turns"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr.startswith("_")
                    and not t.attr.startswith("__")
                    and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls"))
                ):
                    problems.append(f"{module}:{node.lineno} assigns {t.attr}")
    assert problems == []


# Private modules one other package may import: the turn engine is driven by the agent only.
FRIENDS: dict[str, set[str]] = {"dive.turns._engine": {"agent"}}


def test_no_module_imports_another_packages_private_module() -> None:
    """Packages talk through their public names (``dive.messages``, not its ``_blocks``).

    The one exception is a friend module (``FRIENDS``): ``dive.turns._engine`` — the turn's
    state, ledger, open group and ``Ending`` — which only ``dive.agent`` imports.
    """
    problems: list[str] = []
    for module, path in _modules():
        if not module.startswith("dive."):
            continue
        package = module.split(".")[:2]
        for target in _imports(module, path):
            parts = target.split(".")
            if parts[0] != "dive" or parts[:2] == package:
                continue
            friend = next((f for f in FRIENDS if target == f or target.startswith(f + ".")), None)
            if friend is not None and package[1] in FRIENDS[friend]:
                continue
            if len(parts) < 3:
                continue  # dive._public and the like: shared internals of the distribution
            if any(p.startswith("_") for p in parts[2:-1]) or (
                parts[-1].startswith("_") and target in _module_names()
            ):
                problems.append(f"{module} imports {target}")
    assert problems == []


def _module_names() -> set[str]:
    return {m for m, _ in _modules()}


def _receiver(node: ast.expr) -> str:
    """The last name of a call's receiver: ``run.state.settle`` -> ``state``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _method_calls(names: set[str], receiver: str | None = None) -> list[tuple[str, str]]:
    """``(module, method)`` for every call of a method named in ``names`` (on ``receiver``)."""
    found: list[tuple[str, str]] = []
    for module, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in names
                and (receiver is None or _receiver(node.func.value) == receiver)
            ):
                found.append((module, node.func.attr))
    return found


def test_a_calls_answer_has_one_author() -> None:
    """A call's result and its state are written together, by one function.

    ``TurnState.settle`` is the only writer of a group's results (and of the halting and
    terminal marks), and only ``dive.agent._settle`` calls it, where the batch rules live.
    """
    writers = {m for m, _ in _method_calls({"add_result", "halt", "end_with"})}
    assert writers <= {"dive.turns._state"}, writers
    settlers = {m for m, _ in _method_calls({"settle"}, receiver="state")}
    assert settlers == {"dive.agent._settle"}, settlers


def test_the_turn_engine_is_imported_only_by_the_agent() -> None:
    importers = {
        _part(module)
        for module, path in _modules()
        for target in _imports(module, path)
        if target == "dive.turns._engine" or target.startswith("dive.turns._engine.")
    }
    assert importers <= {"agent", "turns"}, importers
    import dive.turns

    engine = {"TurnState", "CallLedger", "TRANSITIONS", "OpenGroup", "Ending"}
    assert engine.isdisjoint(dive.turns.__all__), "engine names stay out of dive.turns"


# Names exported from a second public package on purpose (``import dive``'s flat surface is
# the other exception): the executor's ``Tracer`` is the loop's, and both wire simulators
# hand out the same clock and request types.
ALIASES = {
    "dive.executor.Tracer": "dive.tracing.Tracer",
    "dive.testing.openai.SimClock": "dive.testing.anthropic.SimClock",
    "dive.testing.openai.SimRequest": "dive.testing.anthropic.SimRequest",
}


def _public_packages() -> list[str]:
    out: list[str] = []
    for module, path in _modules():
        parts = module.split(".")
        if len(parts) < 2 or any(p.startswith("_") for p in parts[1:]):
            continue
        if path.name == "__init__.py" or "__all__" in path.read_text():
            out.append(module)
    return out


def test_every_public_name_has_one_home() -> None:
    """An object is exported by one public package (``dive`` itself re-exports the flat
    surface); a second home is a copy a reader has to reconcile."""
    import importlib
    import types

    homes: dict[int, list[str]] = {}
    for package in _public_packages():
        try:
            module = importlib.import_module(package)
        except ImportError:  # an optional extra that is not installed
            continue
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, types.ModuleType | str | int | float | bool) or value is None:
                continue
            if not str(getattr(value, "__module__", "dive")).startswith("dive"):
                continue  # a third party's object (pydantic's ``JsonValue``) is not dive's name
            homes.setdefault(id(value), []).append(f"{package}.{name}")
    doubled = [
        sorted(where) for where in homes.values() if len([w for w in where if w not in ALIASES]) > 1
    ]
    assert doubled == []


# The loop's error classes live in ``dive.errors`` (a feature package with its own family keeps
# it in its own ``_errors`` module). Left where they are: ``ModelRetry``, the signal a validator
# raises (defined with the output), and ``ModelCallError``, the loop's private wrapper of a
# failed model call, never raised out of ``run()``.
CORE = ("agent", "turns", "tools", "llm", "messages", "sessions", "providers", "tracing")
ERRORS_ELSEWHERE = {"ModelRetry", "ModelCallError"}


def test_the_loops_errors_are_defined_in_dive_errors() -> None:
    import dive.errors

    family = set(dive.errors.__all__)
    found: list[str] = []
    for module, path in _modules():
        if _part(module) not in CORE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if bases & family and node.name not in ERRORS_ELSEWHERE:
                found.append(f"{module}.{node.name}")
    assert found == []


def _documented_table() -> dict[str, set[str] | None]:
    """ARCHITECTURE.md's table: part -> what it may import (None: anything)."""
    text = (SRC.parent.parent / "ARCHITECTURE.md").read_text()
    out: dict[str, set[str] | None] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`dive"):
            continue
        parts = [p.strip("` ") for p in cells[0].split(",")]
        allowed = cells[1]
        value: set[str] | None
        if allowed == "anything":
            value = None
        elif allowed == "nothing":
            value = set()
        else:
            value = {a.strip() for a in allowed.split(",")}
        for part in parts:
            out[part.removeprefix("dive.") if part != "dive" else "dive"] = value
    return out


def test_architecture_md_is_the_import_table_this_test_enforces() -> None:
    documented = _documented_table()
    restricted = {k: v for k, v in documented.items() if v is not None}
    assert restricted == ALLOWED
    assert {k for k, v in documented.items() if v is None} == {"testing", "dive"}


# dive.agent shows its seam: the driver's steps, the features they consult, and what both
# share. A feature (or a shared record) never imports a driver step, so it can be read and
# changed on its own; the driver composes them.
AGENT_DRIVER = {
    "_agent",
    "_runargs",
    "_begin",
    "_resume_plan",
    "_run",
    "_setup",
    "_execute",
    "_loop",
    "_modelcall",
    "_output_check",
    "_tools",
    "_toolbatch",
    "_gates",
    "_exec",
    "_settle",
    "_resume",
    "_end",
    "_cancel_suspended",
    "_durable",
    "_eager",
    "_sink",
}
AGENT_FEATURES = {
    "_output",
    "_structured",
    "_approval",
    "_usage_limits",
    "_instructions",
    "_claims",
    "_background",
    "_text",
    "_stream",
}
AGENT_SHARED = {
    "_runner",
    "_events",
    "_result",
    "_options",
    "_context",
    "_hooks",
    "_parent",
    "_outputs",
    "_arguments",
    "_extension",
}


def test_the_agent_package_shows_its_seam() -> None:
    modules = {m.rpartition(".")[2]: p for m, p in _modules() if m.startswith("dive.agent._")}
    assert set(modules) == AGENT_DRIVER | AGENT_FEATURES | AGENT_SHARED
    assert not (AGENT_DRIVER & AGENT_FEATURES)
    assert not (AGENT_DRIVER & AGENT_SHARED)
    assert not AGENT_FEATURES & AGENT_SHARED
    crossing = sorted(
        f"{name} imports {target}"
        for name, path in modules.items()
        if name not in AGENT_DRIVER
        for target in _imports(f"dive.agent.{name}", path)
        if target.startswith("dive.agent._") and target.split(".")[2] in AGENT_DRIVER
    )
    assert crossing == []
