"""Public names show their public module: ``dive.Agent``, not ``dive.agent._agent.Agent``.

Each package calls :func:`publish` on its ``__all__``. A dataclass's string annotations are
resolved first, in the module that defined it, so validation (pydantic) still finds every
name after the class moved to its public module.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping

__all__ = ["publish"]


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split("."))


def _resolve(cls: type) -> None:
    hints = typing.get_type_hints(cls, include_extras=True)
    own: dict[str, object] = vars(cls).get("__annotations__", {})
    for name in own:
        if name in hints:
            own[name] = hints[name]
    for f in dataclasses.fields(cls):
        if f.name in hints:
            f.type = hints[f.name]


def publish(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Set ``__module__`` of the classes in ``names`` to ``module``.

    Only classes defined in a private module (or re-exported by the top-level ``dive``) move.
    """
    top = module == "dive"
    for name in names:
        obj = namespace.get(name)
        if not isinstance(obj, type) or not obj.__module__.startswith("dive"):
            continue
        if not (top or _private(obj.__module__)):
            continue
        if dataclasses.is_dataclass(obj):
            try:
                _resolve(obj)
            except NameError:
                continue  # a name only known to the type checker: keep the defining module
        obj.__module__ = module
