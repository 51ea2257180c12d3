"""Packages that export their submodules' public names without importing them at package import.

A package maps each public name to the submodule defining it and sets
`__getattr__ = exports(__name__, WHERE)` (PEP 562): `from crsim.model import Dialogue` imports only
the submodule that defines `Dialogue`, the first time it is asked for, so a command's start-up pays
only for what it uses (docs/performance.md, "Command-line startup").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: a name in `where` is read from its submodule
    (`where[name]`, relative to the package), any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{module}"), name)

    return __getattr__
