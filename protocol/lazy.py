"""Package names imported on first use (PEP 562), the one helper every package's ``__init__`` shares.

A package lists what it exports as ``name -> module`` (or ``name -> (module, attribute)``
for a name exported under another spelling); ``import package`` then costs nothing, and
``package.name`` imports its module once, the first time it is read.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

Exports = Mapping[str, str | tuple[str, str]]


def lazy_exports(package: str, exports: Exports) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each name of ``exports`` from its module, kept once read."""

    def __getattr__(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
