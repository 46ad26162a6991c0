"""Run every bench module in turn (``make bench``): each module of this package with a ``main``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench


def main() -> None:
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_") and m.name != "run_all"
    )
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        entry = getattr(module, "main", None)
        if entry is None:
            continue
        print(f"== bench.{name}", flush=True)
        started = time.monotonic()
        entry([])
        print(f"== bench.{name} took {time.monotonic() - started:.1f} s\n", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
