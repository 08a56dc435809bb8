"""PEP 562 lazy package exports: a component's `__init__` names its public surface in `__all__` without importing
the modules behind it, so `from slo import load_slos` does not load Spark and `kafka-pulse check` does not load
every collector. Each name is imported from its home module on first access, then cached on the package."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], object]:
    """The module `__getattr__` of `package`: `homes` maps each exported name to the module that defines it."""

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
