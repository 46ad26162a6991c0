"""Run every bench module in turn (``make bench``): each module of this package with a ``main``.

    python -m bench.run_all [--quick]

``--quick`` is passed on to every bench: short runs that show each figure is measured.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time

import bench


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run_all", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs of every bench")
    args = parser.parse_args(argv)
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
        entry(["--quick"] if args.quick else [])
        print(f"== bench.{name} took {time.monotonic() - started:.1f} s\n", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
