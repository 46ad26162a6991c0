"""Package names imported on first use (PEP 562), the one helper every package's ``__init__`` shares.

A package lists what it exports once, as the imports of its ``if TYPE_CHECKING:`` block
(``from MODULE import NAME as NAME``, or ``as OTHER`` for a name exported under another
spelling; ``from PACKAGE import SUBMODULE as SUBMODULE`` for a submodule). Type checkers and
editors read the names there; at run time that block does not run, so ``import package``
costs nothing, and ``lazy_exports`` reads the same lines from the package's source the first
time a name is asked for, then imports that name's module once. ``__all__`` is answered the
same way: the exported names, sorted.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def lazy_exports(package: str) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package``: each exported name from its module, kept once read."""
    found: dict[str, tuple[str, str]] = {}

    def listed() -> dict[str, tuple[str, str]]:
        if not found:
            init_file = Path(sys.modules[package].__file__ or "")
            found.update(typed_exports(init_file))
        return found

    def __getattr__(name: str) -> Any:
        if name == "__all__":
            value: Any = sorted(listed())
        elif (where := listed().get(name)) is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        else:
            module, attribute = where
            if module == package:  # a submodule, which is not an attribute before its import
                value = importlib.import_module(f"{package}.{attribute}")
            else:
                value = getattr(importlib.import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def typed_exports(init_file: Path) -> dict[str, tuple[str, str]]:
    """What the ``if TYPE_CHECKING:`` block of a package's ``__init__`` imports: ``name -> (module, attribute)``."""
    tree = ast.parse(init_file.read_text(encoding="utf-8"), str(init_file))
    names: dict[str, tuple[str, str]] = {}
    for block in tree.body:
        if isinstance(block, ast.If) and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING":
            for line in block.body:
                if not isinstance(line, ast.ImportFrom) or line.level or line.module is None:
                    raise ValueError(f"{init_file}:{line.lineno}: only absolute `from MODULE import NAME as NAME` here")
                for alias in line.names:
                    names[alias.asname or alias.name] = (line.module, alias.name)
    return names
