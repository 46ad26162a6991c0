"""Server processes for the benches: pinned to the servers' core, output to a file, always stopped."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench._support import stop

STARTUP_S = 90.0


@dataclass(frozen=True)
class Cores:
    """Where the servers run (None: not pinned, on a machine with one core)."""

    servers: set[int] | None


@contextmanager
def placed() -> Iterator[Cores]:
    """The client on its own core where there are two; the servers get the other (restored at the end)."""
    affinity = os.sched_getaffinity(0)
    cores = sorted(affinity)
    if len(cores) < 2:
        yield Cores(None)
        return
    os.sched_setaffinity(0, {cores[1]})
    try:
        yield Cores({cores[0]})
    finally:
        os.sched_setaffinity(0, affinity)


@contextmanager
def process(command: list[str], log: Path, cores: Cores) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` on the servers' core, its output in ``log`` (a pipe nobody reads would block it), stopped at the end.

    No ``SWITCHBOARD*`` variable reaches it: what it does is what its arguments say.
    """
    env = {key: value for key, value in os.environ.items() if not key.startswith("SWITCHBOARD")}
    with log.open("wb") as sink:
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        if cores.servers:
            os.sched_setaffinity(child.pid, cores.servers)
        try:
            yield child
        finally:
            stop(child)


def wait_ready(name: str, url: str, log: Path) -> None:
    """Return once ``url`` answers 200; a RuntimeError with the end of ``log`` after STARTUP_S."""
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{name} did not start; its output:\n{log.read_text(errors='replace')[-2000:]}")
