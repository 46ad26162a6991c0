"""Every name a package exports is listed once, in its ``TYPE_CHECKING`` imports, and resolves at run time.

The type checker reads those imports; ``protocol.lazy`` reads the same ones at run time,
so the two cannot disagree (a name moved to another module is moved for both at once).
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ("protocol", "protocol.a2a", "agent_server", "gateway", "gateway.models", "gateway.peers")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exported_name_resolves_from_the_module_its_import_names(package: str) -> None:
    module = importlib.import_module(package)
    names = module.__all__
    assert names == sorted(names) and len(names) > 5
    unresolved = [name for name in names if getattr(module, name, None) is None]
    assert unresolved == []


def test_a_package_is_imported_without_its_exports_and_star_gives_them_all() -> None:
    script = (
        "import sys\n"
        "import gateway\n"
        "assert 'gateway.errors' not in sys.modules and 'pydantic' not in sys.modules\n"
        "from gateway import *\n"
        "print(Event.__module__, Gateway.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["gateway.recording.events", "Gateway"]
