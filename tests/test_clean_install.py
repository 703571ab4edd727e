"""The package as a user gets it: the built wheel installed into fresh virtual environments.

The dev environment installs every extra, so an import that no dependency list declares
passes every other test. Here the wheel (``uv build``) goes into a new venv with no extras:
every public module that must work without one imports, every optional module says which
extra to install, and the offline examples run; a second venv adds the ``toolkit`` and
``anthropic`` extras. Installs read only the uv cache (``--offline``, filled by
``make install``); the build and the venvs are made once per test session.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_public_api import EXPORTS

pytestmark = pytest.mark.clean_install

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

# Public modules that import with no extra installed.
CORE_MODULES = [
    "dive",
    "dive.agent",
    "dive.compaction",
    "dive.errors",
    "dive.executor",
    "dive.globs",
    "dive.llm",
    "dive.messages",
    "dive.messages.codec",
    "dive.permissions",
    "dive.prompts",
    "dive.providers",
    "dive.redaction",
    "dive.sessions",
    "dive.skills",
    "dive.subagents",
    "dive.testing",
    "dive.testing.anthropic",
    "dive.testing.gemini",
    "dive.testing.openai",
    "dive.toolkit",
    "dive.tools",
    "dive.tracing",
    "dive.turns",
    "dive.viewer",  # its web app and serve() need the viewer extra and say so
]

# Public modules that need an extra, and the extra their error must name.
EXTRA_MODULES = {
    "dive.a2a": "a2a",
    "dive.agui": "a2a",
    "dive.cli": "cli",
    "dive.mcp": "mcp",
    "dive.otel": "otel",
    "dive.providers.anthropic": "anthropic",
    "dive.providers.google": "google",
    "dive.providers.openai": "openai",
    "dive.temporal": "temporal",
}

# Examples that run offline with no extra (arguments after the file name).
CORE_EXAMPLES = [
    ("typed_output.py",),
    ("history_json.py",),
    ("coding_agent.py",),
    ("research_team.py",),
    ("human_approval.py", "start"),
]
# Examples that run offline on the bundled Anthropic simulator through the SDK.
ANTHROPIC_EXAMPLES = [("review_bot.py",), ("eval_report.py",), ("quickstart.py",)]


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment with the built wheel installed."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.endswith(("_API_KEY", "_BASE_URL"))
            and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
        }
        return subprocess.run(
            [str(self.python), *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=180,
            check=False,
        )


def _uv() -> list[str]:
    """uv as ``uv run`` names it, else from PATH, else as the Makefile runs it."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    return ["python3", "-m", "uv"]


def _check(cmd: list[str], cwd: Path = ROOT) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} failed ({proc.returncode}); the installs read only the uv cache, "
        f"so run `make install` first.\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _check([*_uv(), "build", "--offline", "--quiet", "--out-dir", str(out), str(ROOT)])
    return out


@pytest.fixture(scope="session")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob("dive_agents-*.whl")
    return found


def _venv(tmp_path_factory: pytest.TempPathFactory, wheel: Path, extras: list[str]) -> Venv:
    """A venv holding the locked versions of the core (and ``extras``) and then the wheel."""
    base = tmp_path_factory.mktemp("venv-" + ("-".join(extras) or "bare"))
    venv = Venv(base / "venv")
    _check([*_uv(), "venv", "--quiet", "--python", sys.executable, str(venv.root)])
    lock_dir = base / "lock"
    lock_dir.mkdir()
    lock = lock_dir / "pylock.toml"
    selected = [arg for extra in extras for arg in ("--extra", extra)]
    export = [*_uv(), "export", "--frozen", "--quiet", "--no-default-groups", "--no-emit-project"]
    _check([*export, *selected, "--format", "pylock.toml", "-o", str(lock)])
    install = [*_uv(), "pip", "install", "--offline", "--quiet", "--python", str(venv.python)]
    _check([*install, "-r", str(lock)])
    # the wheel's own requirements must be met by what the lock put there
    target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    _check([*install, target])
    return venv


@pytest.fixture(scope="session")
def bare(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Venv:
    return _venv(tmp_path_factory, wheel, [])


@pytest.fixture(scope="session")
def with_toolkit(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Venv:
    return _venv(tmp_path_factory, wheel, ["toolkit", "anthropic"])


# --- what is classified (no venv needed) ------------------------------------------------------


def test_every_public_module_is_classified_as_core_or_extra() -> None:
    public = set(EXPORTS)
    classified = set(CORE_MODULES) | set(EXTRA_MODULES)
    assert not set(CORE_MODULES) & set(EXTRA_MODULES)
    unclassified = sorted(public - classified)
    assert not unclassified, (
        f"new public modules {unclassified}: add each to CORE_MODULES (imports with no extra) "
        "or EXTRA_MODULES (with the extra its error names) in tests/test_clean_install.py"
    )
    assert sorted(classified - public) == []


def test_every_extra_named_is_declared() -> None:
    declared = set(PYPROJECT["optional-dependencies"])
    assert set(EXTRA_MODULES.values()) <= declared


# --- the artefacts ----------------------------------------------------------------------------


def test_the_wheel_ships_the_license_and_py_typed(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "dive/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)


def test_the_sdist_ships_the_license_changelog_and_readme(dist: Path) -> None:
    (sdist,) = dist.glob("dive_agents-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml", "src/dive/py.typed"} <= names


# --- a fresh venv without extras --------------------------------------------------------------


def test_core_modules_import_without_extras(bare: Venv, tmp_path: Path) -> None:
    code = (
        "import importlib, json, dive\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "import sys\n"
        "print(json.dumps([dive.__file__, 'griffe' in sys.modules]))\n"
    )
    proc = bare.run("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    location, griffe_loaded = json.loads(proc.stdout)
    assert Path(location).is_relative_to(bare.root), "dive came from elsewhere"
    assert not griffe_loaded, "griffe is imported on a tool's first docstring, not at import"


def test_modules_needing_an_extra_name_it(bare: Venv, tmp_path: Path) -> None:
    code = (
        "import importlib, json\n"
        "from dive.errors import MissingExtraError\n"
        "out = {}\n"
        f"for name in {sorted(EXTRA_MODULES)!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "        out[name] = 'imported'\n"
        "    except MissingExtraError as exc:\n"
        "        out[name] = str(exc)\n"
        "    except Exception as exc:\n"
        "        out[name] = f'{type(exc).__name__}: {exc}'\n"
        "print(json.dumps(out))\n"
    )
    proc = bare.run("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said: dict[str, str] = json.loads(proc.stdout)
    wrong = {
        name: text
        for name, text in said.items()
        if f"pip install 'dive-agents[{EXTRA_MODULES[name]}]'" not in text
    }
    assert not wrong, f"these modules do not say which extra to install: {wrong}"


def test_the_web_tools_name_the_toolkit_extra(bare: Venv, tmp_path: Path) -> None:
    code = (
        "from dive.errors import MissingExtraError\n"
        "from dive.toolkit import WebFetch\n"
        "try:\n"
        "    WebFetch()\n"
        "except MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    proc = bare.run("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'dive-agents[toolkit]'" in proc.stdout


def test_the_viewer_app_names_its_extra(bare: Venv, tmp_path: Path) -> None:
    code = (
        "from dive.errors import MissingExtraError\n"
        "import dive.viewer\n"
        "for name in ('app', 'serve'):\n"
        "    try:\n"
        "        getattr(dive.viewer, name)\n"
        "    except MissingExtraError as exc:\n"
        "        print(exc)\n"
    )
    proc = bare.run("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert all("pip install 'dive-agents[viewer]'" in line for line in lines)


def test_the_console_script_names_the_cli_extra(bare: Venv, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(bare.root / "bin" / "dive"), "--help"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("dive: the dive command line needs the cli extra")
    assert "pip install 'dive-agents[cli]'" in proc.stderr


@pytest.mark.parametrize("example", CORE_EXAMPLES, ids=lambda e: e[0])
def test_offline_examples_run_without_extras(
    bare: Venv, example: tuple[str, ...], tmp_path: Path
) -> None:
    name, *args = example
    proc = bare.run(str(ROOT / "examples" / name), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def test_pip_show_lists_license_classifiers_and_urls(bare: Venv) -> None:
    pip = [sys.executable, "-m", "pip", "--python", str(bare.python)]
    shown = _check([*pip, "show", "--verbose", "dive-agents"])
    assert "Name: dive-agents" in shown
    assert f"License-Expression: {PYPROJECT['license']}" in shown
    for classifier in PYPROJECT["classifiers"]:
        assert f"  {classifier}\n" in shown
    for label, url in PYPROJECT["urls"].items():
        assert f"  {label}, {url}\n" in shown


# --- a fresh venv with the toolkit and anthropic extras ----------------------------------------


def test_the_toolkit_imports_with_its_extra(with_toolkit: Venv, tmp_path: Path) -> None:
    code = (
        "import dive.toolkit, dive.providers.anthropic\n"
        "from dive.toolkit import WebFetch, WebSearch\n"
        "print(WebFetch().name, WebSearch().name)\n"
    )
    proc = with_toolkit.run("-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["WebFetch", "WebSearch"]


@pytest.mark.parametrize("example", ANTHROPIC_EXAMPLES, ids=lambda e: e[0])
def test_simulator_examples_run_with_the_anthropic_extra(
    with_toolkit: Venv, example: tuple[str, ...], tmp_path: Path
) -> None:
    name, *args = example
    proc = with_toolkit.run(str(ROOT / "examples" / name), *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
