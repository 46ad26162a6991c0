"""Services as child processes: start them, wait until they answer, and always stop them.

`make demo` runs each agent and the gateway as its own process, the way they are deployed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_TIMEOUT_S = 90.0
"""Generous: reached only by a service that never answers; a starved machine may take tens of seconds to start one."""
STOP_TIMEOUT_S = 5.0


@dataclass
class Service:
    name: str
    url: str
    ready_path: str
    process: subprocess.Popen[bytes]


class ServiceGroup:
    """Child processes started with ``start``; ``stop_all`` ends every one of them."""

    def __init__(self, cwd: Path, log_dir: Path) -> None:
        self.cwd = cwd
        self.log_dir = log_dir
        self.services: list[Service] = []

    def start(
        self, name: str, args: Sequence[str], url: str, ready_path: str, env: Mapping[str, str] | None = None
    ) -> Service:
        """Run ``python -m gateway ARGS`` (a ``switchboard`` command) in the background, ``env`` added to ours."""
        env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        with open(self.log_dir / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "gateway", *args],
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - the demo starts no thread before its services
            )
        service = Service(name, url, ready_path, process)
        self.services.append(service)
        return service

    def wait_ready(self) -> None:
        """Until every service answers its ready path; a service that dies or stays silent is an error."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        with httpx.Client(timeout=1.0) as client:
            for service in self.services:
                while True:
                    if service.process.poll() is not None:
                        log = self.log_of(service).read_text(errors="replace")[-2000:]
                        raise RuntimeError(f"{service.name} exited with {service.process.returncode}; its log:\n{log}")
                    try:
                        if client.get(service.url + service.ready_path).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"{service.name} did not answer on {service.url} within {READY_TIMEOUT_S:g} s"
                        )
                    time.sleep(0.05)

    def log_of(self, service: Service) -> Path:
        return self.log_dir / f"{service.name}.log"

    def stop_all(self) -> None:
        for service in self.services:
            if service.process.poll() is None:
                service.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for service in self.services:
            try:
                service.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                service.process.kill()
                service.process.wait()
        self.services.clear()


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM when the process that started it dies, however it dies (Linux).

    A demo killed with SIGKILL runs no cleanup; without this its services would run on, orphaned.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1


@contextmanager
def service_group(cwd: Path, log_dir: Path) -> Iterator[ServiceGroup]:
    """A ServiceGroup whose processes are stopped on exit, also on Ctrl-C or an error."""
    group = ServiceGroup(cwd, log_dir)
    try:
        yield group
    finally:
        group.stop_all()
