"""How long a start takes: ``switchboard --help`` and ``import gateway`` (alone, and what a program that
drives a ``Gateway`` imports), against ``python -c pass``.

    python -m bench.startup [--quick]

Each command runs in a fresh interpreter of this virtualenv (no ``SWITCHBOARD_*`` variable), on
the servers' core; rounds interleave the commands; the median wall time of each is printed, with
what it adds to an interpreter that does nothing.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from bench._support import cores, median

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "import gateway": ["-c", "import gateway"],
    "from gateway import Gateway": ["-c", "from gateway import Gateway"],
    "switchboard --help": ["-m", "gateway", "--help"],
}
_TIMEOUT_S = 60.0


def _took(argv: list[str]) -> float:
    servers, _ = cores()
    env = {key: value for key, value in os.environ.items() if not key.startswith("SWITCHBOARD")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *argv],
        check=True,
        stdout=subprocess.DEVNULL,
        env=env,
        timeout=_TIMEOUT_S,
        preexec_fn=(lambda: os.sched_setaffinity(0, servers)) if servers else None,
    )
    return time.perf_counter() - started


def measure(*, quick: bool) -> dict[str, float]:
    rounds = 3 if quick else 15
    seen: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():
        _took(argv)  # the files in the page cache, the bytecode compiled
    for number in range(rounds):
        order = list(COMMANDS.items())
        for name, argv in order if number % 2 == 0 else reversed(order):
            seen[name].append(_took(argv))
    return {name: median(values) for name, values in seen.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds, not 15")
    args = parser.parse_args(argv)
    figures = measure(quick=args.quick)
    base = figures["python -c pass"]
    print("start-up wall time, fresh interpreters; medians of rounds")
    print(f"  {'command':<30}{'ms':>8}{'minus python -c pass':>24}")
    for name, seconds in figures.items():
        print(f"  {name:<30}{seconds * 1000:>8.0f}{(seconds - base) * 1000:>24.0f}")


if __name__ == "__main__":
    main()
