"""Gateway replicas for the multi-process tests: ``python -m gateway gateway`` processes sharing one Redis.

Each replica is a real process with its own configuration file, port and data directory;
sessions, events and registrations are on the Redis spec given (one key prefix per test
module, so nothing is shared with other tests). Every process started here is stopped
when the block ends, also when the test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from agent_server.http.loopback import free_port
from tests.support.waiting import PROCESS_S

ROOT = Path(__file__).resolve().parents[2]
STOP_S = 10.0


@dataclass
class Replica:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=STOP_S)


def replica_config(redis_spec: str, *, lease_s: float, agents: str = "") -> str:
    """The configuration every replica shares, but for its port and data directory (added per replica)."""
    return (
        f'[stores]\nsessions = "{redis_spec}"\nevents = "{redis_spec}"\n\n'
        f"[stores.redis]\nlease_secs = {lease_s}\nfollow_block_secs = 1\n\n{agents}"
    )


@contextmanager
def replicas(directory: Path, config: str, count: int) -> Iterator[list[Replica]]:
    """``count`` replicas of one configuration, started together; yields them once each answers /health."""
    with ExitStack() as stack:
        started: list[Replica] = []
        for index in range(count):
            name = "ABCDEFGH"[index]
            port = free_port()
            path = directory / f"replica-{name}.toml"
            path.write_text(
                f'[gateway]\nport = {port}\ndata_dir = "{directory / name}"\nstartup_wait_secs = 10\n\n{config}',
                encoding="utf-8",
            )
            log = directory / f"replica-{name}.log"
            process = subprocess.Popen(
                [sys.executable, "-m", "gateway", "gateway", "--config", str(path)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=stack.enter_context(log.open("wb")),
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            replica = Replica(name, f"http://127.0.0.1:{port}", process, log)
            stack.callback(_stop, replica)
            started.append(replica)
        for replica in started:
            _wait_healthy(replica)
        yield started


def lines_of(response: httpx.Response) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in response.text.splitlines() if line]


def _wait_healthy(replica: Replica) -> None:
    deadline = time.monotonic() + PROCESS_S
    while time.monotonic() < deadline:
        if replica.process.poll() is not None:
            raise AssertionError(f"replica {replica.name} exited: {replica.log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{replica.url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"replica {replica.name} did not come up: {replica.log.read_text(errors='replace')}")


def _stop(replica: Replica) -> None:
    if replica.process.poll() is None:
        replica.process.send_signal(signal.SIGTERM)
        try:
            replica.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            replica.process.kill()
            replica.process.wait()
