"""What the benches share: servers in subprocesses pinned to one core, this process on the other, rates, medians.

Where the machine has two cores the servers get the first and the client (this process) the
second, so a server's speed is not the client's. Every loop here is bounded in count and time;
every process started is stopped when its block ends, however it ends.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx

from agent_server.http.loopback import free_port

STARTUP_S = 90.0
STOP_S = 10.0

_CORES = sorted(os.sched_getaffinity(0))  # before any pinning of this process

Op = Callable[[], Awaitable[int]]
"""One operation of a rate: it returns how many units it did (requests, lines)."""


def cores() -> tuple[set[int] | None, set[int] | None]:
    """(servers' cores, client's cores), or (None, None) on a machine with fewer than two."""
    if len(_CORES) < 2:
        return None, None
    return {_CORES[0]}, {_CORES[1]}


def pinning() -> str:
    servers, client = cores()
    if servers is None or client is None:
        return "not pinned (fewer than 2 cores)"
    return f"servers on core {min(servers)}, client on core {min(client)}"


@contextmanager
def client_core() -> Iterator[None]:
    """This process on the client's core for the block (restored after: a test may run a bench)."""
    affinity = os.sched_getaffinity(0)
    _, client = cores()
    if client:
        os.sched_setaffinity(0, client)
    try:
        yield
    finally:
        os.sched_setaffinity(0, affinity)


@contextmanager
def server_process(
    command: Sequence[str], ready_path: str, log: Path, *, env: dict[str, str] | None = None
) -> Iterator[str]:
    """``command`` (given ``{port}``) on the servers' core; yields its URL once ``ready_path`` answers 200."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [part.replace("{port}", str(port)) for part in command]
    with server_core_process(argv, log, env=env) as process:
        wait_ready(url + ready_path, process, " ".join(argv), log)
        yield url


@contextmanager
def server_core_process(
    argv: Sequence[str], log: Path, *, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` on the servers' core, its output in ``log``, stopped when the block ends."""
    servers, _ = cores()

    def place() -> None:
        if servers:
            os.sched_setaffinity(0, servers)

    environment = {k: v for k, v in (env or os.environ).items() if not k.startswith("SWITCHBOARD")}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=environment,
            preexec_fn=place,  # noqa: PLW1509 - started before any thread of the bench
        )
        try:
            yield process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``STOP_S``; returns once it has exited."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def python(*code: str) -> list[str]:
    """A command running Python code in this interpreter (the same virtualenv)."""
    return [sys.executable, *code]


def wait_ready(
    url: str, process: subprocess.Popen[bytes], what: str, log: Path | None = None, *, timeout_s: float = STARTUP_S
) -> None:
    """Return once ``url`` answers 200; ``process`` exiting first, or no answer in ``timeout_s``, is an error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            code = process.returncode
            why = f"exited ({code})" if code is not None else f"no answer in {timeout_s:g} s"
            output = f"; its output:\n{tail(log)}" if log is not None else ""
            raise RuntimeError(f"{what} did not start: {why} at {url}{output}")
        time.sleep(0.05)


def tail(log: Path, lines: int = 20) -> str:
    """The end of a server's output, for an error that says why it stopped."""
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


async def rate(op: Op, *, concurrency: int, count: int, seconds: float) -> float:
    """Units per second of ``op`` run by ``concurrency`` workers, over at most ``count`` ops or ``seconds``."""
    done = 0
    units = 0
    started = time.perf_counter()
    deadline = started + seconds

    async def worker() -> None:
        nonlocal done, units
        while done < count and time.perf_counter() < deadline:
            done += 1
            did = await op()  # awaited before the sum is read: ``units += await op()`` would lose updates
            units += did

    async with anyio.create_task_group() as task_group:
        for _ in range(concurrency):
            task_group.start_soon(worker)
    return units / (time.perf_counter() - started)


async def latencies(op: Op, *, count: int, seconds: float) -> list[float]:
    """Seconds each call of ``op`` took, one at a time, at most ``count`` calls or ``seconds``."""
    took: list[float] = []
    deadline = time.perf_counter() + seconds
    while len(took) < count and time.perf_counter() < deadline:
        started = time.perf_counter()
        await op()
        took.append(time.perf_counter() - started)
    return took


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (nan for no values)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[max(0, min(len(ordered) - 1, int(q * len(ordered) + 0.999999) - 1))]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}" if reference else "-"
