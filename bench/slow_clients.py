"""Slow clients past a server's open-file limit: are they all cut, how fast, how large does the log grow?

    python -m bench.slow_clients [--quick] [--clients 2000] [--open-files 1024] [--max-connections 800]
                                 [--header-timeout 10] [--within 120]

An agent server (``switchboard serve``) and then a gateway (``switchboard gateway``) run as
subprocesses on 127.0.0.1 at an open-file limit, soft and hard, they cannot raise
(tests/support/starved_server.py), each once with its default connection cap and once with
``--max-connections``. This process opens every slow client at once (each sends part of its
headers, then nothing) and reads them until the server has closed each or ``--within`` has
passed. Each server prints: slow clients cut (a 408, or a close without one) and how long
the last one took, whether a normal client is answered afterwards, and the bytes the server
logged. It exits 1 when a slow client was left or a normal client was not answered.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_server.http.loopback import free_port
from tests.support.starved_server import (
    agent_server_args,
    answers,
    gateway_args,
    slow_client,
    starved_server,
    wait_until_cut,
)

Out = Callable[[str], None]
_SERVERS = {"agent server": agent_server_args, "gateway": gateway_args}


@dataclass(frozen=True)
class Settings:
    clients: int
    open_files: int
    max_connections: int
    header_timeout_s: float
    within_s: float


@dataclass(frozen=True)
class Outcome:
    server: str
    max_connections: int | None
    clients: int
    cut: int
    answered_408: int
    last_cut_s: float
    served_after: bool
    log_bytes: int

    @property
    def ok(self) -> bool:
        return self.cut == self.clients and self.served_after

    def line(self) -> str:
        cap = "default cap" if self.max_connections is None else f"max_connections {self.max_connections}"
        return (
            f"{self.server}, {cap}: {self.cut} of {self.clients} slow clients cut ({self.answered_408} with a 408), "
            f"the last after {self.last_cut_s:.1f} s; a normal client {'answered' if self.served_after else 'NOT'} "
            f"after; log {self.log_bytes} bytes"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 300 clients at 256 files, 1 s timeout")
    parser.add_argument("--clients", type=int, default=None, help="slow clients (default 2000)")
    parser.add_argument("--open-files", type=int, default=None, help="the servers' open-file limit (default 1024)")
    parser.add_argument("--max-connections", type=int, default=800, help="the capped runs' limit (default 800)")
    parser.add_argument("--header-timeout", type=float, default=None, help="seconds (default 10, the servers')")
    parser.add_argument("--within", type=float, default=120.0, help="seconds to wait for every cut (default 120)")
    args = parser.parse_args(argv)
    settings = Settings(
        clients=args.clients or (300 if args.quick else 2000),
        open_files=args.open_files or (256 if args.quick else 1024),
        max_connections=min(args.max_connections, (args.open_files or (256 if args.quick else 1024)) - 64),
        header_timeout_s=args.header_timeout or (1.0 if args.quick else 10.0),
        within_s=args.within,
    )
    try:
        outcomes = measure(settings, lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("interrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None
    if not all(outcome.ok for outcome in outcomes):
        raise SystemExit(1)


def measure(settings: Settings, out: Out) -> list[Outcome]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, settings.clients + 256)), hard))
    out(
        f"{settings.clients} slow clients, servers at {settings.open_files} open files, "
        f"header timeout {settings.header_timeout_s:g} s"
    )
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as tmp:
        for name, args in _SERVERS.items():
            for cap in (None, settings.max_connections):
                directory = Path(tmp) / f"{name.replace(' ', '-')}-{cap}"
                directory.mkdir()
                outcome = _burst(name, args, cap, settings, directory)
                out(outcome.line())
                outcomes.append(outcome)
    return outcomes


def _burst(name: str, args: Callable[..., list[str]], cap: int | None, settings: Settings, directory: Path) -> Outcome:
    port = free_port()
    log = directory / "server.log"
    with starved_server(args(port, directory, settings.header_timeout_s, cap), port, settings.open_files, log) as url:
        slow = [slow_client(port) for _ in range(settings.clients)]
        started = time.monotonic()
        try:
            cut = wait_until_cut(slow, settings.within_s)
        finally:
            for sock in slow:
                sock.close()
        last_cut_s = time.monotonic() - started
        served_after = any(answers(url, timeout_s=10.0) for _ in range(3))
    return Outcome(
        server=name,
        max_connections=cap,
        clients=settings.clients,
        cut=len(cut),
        answered_408=sum(1 for answer in cut.values() if answer.startswith(b"HTTP/1.1 408")),
        last_cut_s=last_cut_s,
        served_after=served_after,
        log_bytes=log.stat().st_size,
    )


if __name__ == "__main__":
    main()
