"""Every public class says what it is for, and every public parameter is documented.

"Public" is what the pinned ``__all__``s export (``tests/test_public_api.py``): each exported
function, each exported class (with the dive classes it inherits from) and each public
method of those classes. griffe reads the source the way the API reference does, with the
Google parser. A parameter counts as documented when it is listed in an ``Args:`` (or
``Attributes:``) section of the function, of the class or of its ``__init__``, or when the
field has its own docstring; a method may inherit the descriptions of the method it
overrides in a dive base class, or of the same method of an exported ``Protocol`` whose
every method the class has (``SQLiteSessionStore.load`` from ``SessionStore.load``).
``self``/``cls``, ``_private`` parameters and the single-value ``type``/``kind:
Literal["..."]`` discriminator of records are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import griffe
import pytest

from tests.test_public_api import EXPORTS

SRC = Path(__file__).resolve().parent.parent / "src"


@dataclass(frozen=True, order=True)
class Gap:
    """One missing piece of documentation, named by its public path."""

    where: str
    param: str = ""  # empty: the class docstring itself is missing

    def __str__(self) -> str:
        return f"{self.where}({self.param})" if self.param else f"{self.where} (class docstring)"


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    loaded = griffe.load(
        "dive",
        search_paths=[str(SRC)],
        docstring_parser="google",
        docstring_options={"warnings": False},
    )
    assert isinstance(loaded, griffe.Module)
    return loaded


def _described(docstring: griffe.Docstring | None) -> set[str]:
    """Names an ``Args:``/``Attributes:`` section describes (``x, y:`` describes both)."""
    if docstring is None:
        return set()
    names: set[str] = set()
    for section in docstring.parsed:
        if section.kind.value in ("parameters", "other parameters", "attributes"):
            for item in section.value:
                names.update(n.strip().lstrip("*") for n in str(item.name).split(","))
    return names


def _counted(param: griffe.Parameter) -> bool:
    if param.name in ("self", "cls") or param.name.startswith("_"):
        return False
    annotation = param.annotation
    discriminator = (
        param.name in ("type", "kind")
        and isinstance(annotation, griffe.ExprSubscript)
        and str(annotation.left) == "Literal"
        and "," not in str(annotation.slice)
    )
    return not discriminator


def _dive_mro(cls: griffe.Class) -> list[griffe.Class]:
    try:
        bases = cls.mro()
    except (griffe.AliasResolutionError, ValueError):
        bases = []
    return [cls, *(b for b in bases if b.path.startswith("dive."))]


def _class_docs(cls: griffe.Class) -> set[str]:
    """What a class (or any dive class it inherits from) documents about its fields."""
    names: set[str] = set()
    for klass in _dive_mro(cls):
        names |= _described(klass.docstring)
        init = klass.members.get("__init__")
        if isinstance(init, griffe.Function):
            names |= _described(init.docstring)
        names.update(
            name
            for name, member in klass.members.items()
            if not member.is_alias and member.is_attribute and member.docstring
        )
    return names


def _own_constructor(cls: griffe.Class) -> list[griffe.Parameter]:
    """The constructor parameters this class introduces (its ``__init__`` or its fields)."""
    init = cls.members.get("__init__")
    if isinstance(init, griffe.Function) and init.lineno:
        return list(init.parameters)  # written here, not made from the fields
    if "dataclass" in cls.labels:
        own = {n for n, m in cls.members.items() if not m.is_alias and m.is_attribute}
        return [p for p in cls.parameters if p.name in own]
    return []


def _public_methods(cls: griffe.Class) -> set[str]:
    return {
        name
        for name, member in cls.members.items()
        if not name.startswith("_") and isinstance(member, griffe.Function)
    }


def _protocols(objects: Iterable[griffe.Object]) -> list[griffe.Class]:
    """The exported ``Protocol`` classes: a class with all their methods implements them."""
    return [
        obj
        for obj in objects
        if isinstance(obj, griffe.Class)
        and any(str(base).split("[")[0].endswith("Protocol") for base in obj.bases)
        and _public_methods(obj)
    ]


def _implements(cls: griffe.Class, protocol: griffe.Class) -> bool:
    try:
        names = set(cls.all_members)
    except (griffe.AliasResolutionError, ValueError):
        names = set(cls.members)
    return cls is not protocol and _public_methods(protocol) <= names


def _method_docs(cls: griffe.Class, name: str, protocols: Sequence[griffe.Class]) -> set[str]:
    """What the method, the one it overrides, or a protocol's it implements documents."""
    names: set[str] = set()
    sources = [*_dive_mro(cls), *(p for p in protocols if _implements(cls, p))]
    for klass in sources:
        method = klass.members.get(name)
        if isinstance(method, griffe.Function):
            names |= _described(method.docstring)
    return names


def _function_gaps(where: str, fn: griffe.Function, documented: set[str]) -> Iterator[Gap]:
    for param in fn.parameters:
        if _counted(param) and param.name not in documented:
            yield Gap(where, param.name)


def _class_gaps(
    where: str, cls: griffe.Class, protocols: Sequence[griffe.Class] = ()
) -> Iterator[Gap]:
    if cls.docstring is None or not cls.docstring.value.strip():
        yield Gap(where)
    documented = _class_docs(cls)
    for param in _own_constructor(cls):
        if _counted(param) and param.name not in documented:
            yield Gap(where, param.name)
    for name, member in cls.members.items():
        if name.startswith("_") or not isinstance(member, griffe.Function):
            continue
        if "property" in member.labels:
            continue
        documented = _method_docs(cls, name, protocols)
        yield from _function_gaps(f"{where}.{name}", member, documented)


def _public_objects(package: griffe.Module) -> dict[str, griffe.Object]:
    """Each exported dive object once, under its deepest public module's name."""
    found: dict[str, tuple[str, griffe.Object]] = {}
    for module_name, names in EXPORTS.items():
        module = package if module_name == "dive" else package[module_name.removeprefix("dive.")]
        for name in names:
            member = module.members.get(name)
            if member is None or name.startswith("__"):
                continue
            try:
                target = member.final_target if isinstance(member, griffe.Alias) else member
            except griffe.AliasResolutionError:
                continue  # a re-exported third-party name (pydantic.JsonValue)
            if not isinstance(target, (griffe.Class, griffe.Function)):
                continue
            if not target.path.startswith("dive."):
                continue
            public = f"{module_name}.{name}"
            known = found.get(target.path)
            if known is None or len(public) > len(known[0]):
                found[target.path] = (public, target)
    return dict(found.values())


def _bases_to_check(objects: dict[str, griffe.Object]) -> dict[str, griffe.Object]:
    """The dive classes the exported ones inherit from, named by the first exporter."""
    seen = {obj.path for obj in objects.values()}
    extra: dict[str, griffe.Object] = {}
    for public, obj in objects.items():
        if not isinstance(obj, griffe.Class):
            continue
        for base in _dive_mro(obj)[1:]:
            if base.path not in seen:
                seen.add(base.path)
                extra[f"{public} (base {base.path})"] = base
    return extra


def _gaps(package: griffe.Module) -> list[Gap]:
    objects = _public_objects(package)
    objects |= _bases_to_check(objects)
    protocols = _protocols(objects.values())
    gaps: list[Gap] = []
    for where, obj in objects.items():
        if isinstance(obj, griffe.Class):
            gaps.extend(_class_gaps(where, obj, protocols))
        elif isinstance(obj, griffe.Function):
            gaps.extend(_function_gaps(where, obj, _described(obj.docstring)))
    return sorted(set(gaps))


def test_the_checker_sees_the_public_surface(package: griffe.Module) -> None:
    objects = _public_objects(package)
    assert "dive.agent.Agent" in objects
    assert "dive.tools.tool" in objects
    assert len(objects) > 300
    agent = objects["dive.agent.Agent"]
    assert isinstance(agent, griffe.Class)
    assert {"model", "instructions", "tools"} <= _class_docs(agent)


def _grouped(gaps: list[Gap]) -> str:
    """One line per object: ``dive.x.f(a, b)``, or ``dive.x.C (class docstring)``."""
    params: dict[str, list[str]] = {}
    for gap in gaps:
        params.setdefault(gap.where, []).append(gap.param)  # "" sorts first
    lines: list[str] = []
    for where, names in params.items():
        if names and names[0] == "":
            lines.append(f"{where} (class docstring)")
            names = names[1:]
        if names:
            lines.append(f"{where}({', '.join(names)})")
    return "\n  ".join(lines)


def test_every_public_parameter_and_class_is_documented(package: griffe.Module) -> None:
    gaps = _gaps(package)
    assert not gaps, (
        f"{len(gaps)} public names lack documentation (Google style: a class docstring "
        "saying what it is for; each parameter in the function's, class's or __init__'s "
        "Args: section, or a field's Attributes: entry):\n  " + _grouped(gaps)
    )


def test_the_checker_reports_each_missing_piece(tmp_path: Path) -> None:
    (tmp_path / "sample.py").write_text(
        "from dataclasses import dataclass\n"
        "from typing import Literal, Protocol\n"
        "class Bare:\n"
        "    def __init__(self, x: int) -> None: ...\n"
        "@dataclass\n"
        "class Record:\n"
        '    """A record.\n\n    Attributes:\n        a: the a.\n    """\n'
        '    type: Literal["record"] = "record"\n'
        "    a: int = 0\n"
        "    b: int = 0\n"
        "def f(a: int, b: int, *, _private: int = 0) -> None:\n"
        '    """F.\n\n    Args:\n        a: the a.\n    """\n'
        "class Store(Protocol):\n"
        '    """A store."""\n'
        "    def load(self, id: str) -> None:\n"
        '        """Load.\n\n        Args:\n            id: the id.\n        """\n'
        "class Memory:\n"
        '    """A store in memory."""\n'
        "    def load(self, id: str) -> None: ...\n"
        "    def extra(self, n: int) -> None: ...\n"
    )
    module = griffe.load("sample", search_paths=[str(tmp_path)], docstring_parser="google")
    assert isinstance(module, griffe.Module)
    members = {name: module[name] for name in ("Bare", "Record", "f", "Store", "Memory")}
    protocols = _protocols(members.values())
    gaps: list[Gap] = []
    for name, obj in members.items():
        if isinstance(obj, griffe.Class):
            gaps.extend(_class_gaps(f"sample.{name}", obj, protocols))
        elif isinstance(obj, griffe.Function):
            gaps.extend(_function_gaps(f"sample.{name}", obj, _described(obj.docstring)))
    assert sorted(str(g) for g in gaps) == [
        "sample.Bare (class docstring)",
        "sample.Bare(x)",
        "sample.Memory.extra(n)",  # load's description comes from the protocol
        "sample.Record(b)",
        "sample.f(b)",
    ]
    assert _grouped(sorted(gaps)) == (
        "sample.Bare (class docstring)\n  sample.Bare(x)\n  sample.Memory.extra(n)\n"
        "  sample.Record(b)\n  sample.f(b)"
    )
