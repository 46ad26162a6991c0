"""Python objects named in text, as ``package.module:attribute`` (tools in the configuration, ``switchboard serve``).

Modules are imported with the working directory first on the path, as ``python -m`` would.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

_PYTHON_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def is_python_ref(value: str) -> bool:
    """``package.module:attribute``, how a local agent names a Python function tool."""
    return bool(_PYTHON_REF.match(value))


def import_from_cwd(module_name: str) -> Any:
    """Import a dotted module, the working directory first on the path (as ``python -m`` would)."""
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    return importlib.import_module(module_name)


def import_python_ref(ref: str) -> Any:
    """The object ``package.module:attribute.path`` names; ImportError or AttributeError when it does not."""
    module_name, _, attribute = ref.partition(":")
    target: Any = import_from_cwd(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target
