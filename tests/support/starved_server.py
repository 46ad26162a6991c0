"""A server process out of file descriptors, and slow clients to exhaust it: for the test and the bench of it.

The server (``switchboard serve`` or ``switchboard gateway``) gets an open-file limit, soft
and hard, as it starts, so it cannot raise it: more slow clients than it has descriptors
exhaust it, as thousands would at an ordinary limit. A slow client sends part of its
headers and never the rest; it is cut when the server answers (a 408) and closes, or resets.
"""

from __future__ import annotations

import os
import resource
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import httpx

from tests.support.processes import stop_process
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[2]
CARD = "/.well-known/agent.json"
SLOW_HEAD = b"GET /.well-known/agent.json HTTP/1.1\r\nHost: x\r\nX-Slow: "


def agent_server_args(port: int, directory: Path, header_timeout_s: float, max_connections: int | None) -> list[str]:
    """``switchboard serve`` of the echo agent on ``port``."""
    limit = [] if max_connections is None else ["--max-connections", str(max_connections)]
    return [
        *("serve", "examples.echo:agent", "--port", str(port), *limit),
        *("--header-timeout", str(header_timeout_s), "--log-level", "warning"),
    ]


def gateway_args(port: int, directory: Path, header_timeout_s: float, max_connections: int | None) -> list[str]:
    """``switchboard gateway`` on ``port``, its data and configuration in ``directory``."""
    config = directory / "gateway.toml"
    limit = "" if max_connections is None else f"max_connections = {max_connections}\n"
    config.write_text(
        f'[gateway]\nport = {port}\ndata_dir = "{directory / "data"}"\nlog_level = "warning"\n'
        f"header_timeout_secs = {header_timeout_s}\n{limit}",
        encoding="utf-8",
    )
    return ["gateway", "--config", str(config)]


@contextmanager
def starved_server(args: list[str], port: int, open_files: int, log: Path) -> Iterator[str]:
    """``python -m gateway ARGS`` (listening on ``port``) at an open-file limit of ``open_files``, its stderr in
    ``log``; yields its URL once it answers, and stops it when the block ends."""
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", *args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    # Soft and hard, so the server cannot raise it; whether before or after it tried, new descriptors are bound by it.
    resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (open_files, open_files))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers(url) or process.poll() is not None, "the server to start", PROCESS_S)
        assert process.poll() is None, log.read_text(errors="replace")
        yield url
    finally:
        stop_process(process)


def slow_client(port: int) -> socket.socket:
    """A connection that sends part of its headers and never the rest."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=PROCESS_S)
    sock.sendall(SLOW_HEAD)
    sock.setblocking(False)
    return sock


def wait_until_cut(slow: list[socket.socket], within_s: float) -> dict[socket.socket, bytes]:
    """What each slow client read until the server closed it (a reset reads as nothing), within ``within_s``.

    Each is closed as soon as the server closed it, as a client does, so its descriptor is
    the server's again."""
    received = dict.fromkeys(slow, b"")
    cut: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + within_s
    with selectors.DefaultSelector() as selector:
        for sock in slow:
            selector.register(sock, selectors.EVENT_READ)
        while len(cut) < len(slow) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1.0):
                sock = cast(socket.socket, key.fileobj)
                try:
                    chunk = sock.recv(65536)
                except BlockingIOError:
                    continue
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    received[sock] += chunk
                    continue
                cut[sock] = received[sock]
                selector.unregister(sock)
                sock.close()
    return cut


def answers(url: str, timeout_s: float = 5.0) -> bool:
    """Whether a normal client gets the card."""
    try:
        return httpx.get(url + CARD, timeout=timeout_s).status_code == 200
    except httpx.TransportError:
        return False
