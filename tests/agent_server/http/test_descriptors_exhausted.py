"""A server out of file descriptors (agent_server.http.server): slow clients are still cut on their
timeouts, accepting pauses without a log line per attempt, and normal clients get through after.

The server is a real process (``switchboard serve``, ``switchboard gateway``) whose open-file limit, soft and hard, is
set low as it starts, so it cannot raise it: more slow clients than it has descriptors
exhaust it, as many thousands would at an ordinary limit.
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
from pathlib import Path
from typing import cast

import httpx
import pytest

from agent_server.http.loopback import free_port
from tests.support.processes import stop_process
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[3]
OPEN_FILES = 256
SLOW_CLIENTS = 400
HEADER_TIMEOUT_S = 1.0
CUT_WITHIN_S = 60.0
LOG_BOUND = 16 * 1024
SLOW_HEAD = b"GET /.well-known/agent.json HTTP/1.1\r\nHost: x\r\nX-Slow: "


def _agent_server(port: int, directory: Path) -> list[str]:
    return [
        *("serve", "examples.echo:agent", "--port", str(port)),
        *("--header-timeout", str(HEADER_TIMEOUT_S), "--log-level", "warning"),
    ]


def _gateway(port: int, directory: Path) -> list[str]:
    config = directory / "gateway.toml"
    config.write_text(
        f'[gateway]\nport = {port}\ndata_dir = "{directory / "data"}"\nlog_level = "warning"\n'
        f"header_timeout_secs = {HEADER_TIMEOUT_S}\n",
        encoding="utf-8",
    )
    return ["gateway", "--config", str(config)]


@pytest.fixture(params=[_agent_server, _gateway], ids=["agent_server", "gateway"])
def starved_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An agent server (``switchboard serve``) or a gateway with a 1 s header timeout at an open-file limit of
    OPEN_FILES; yields its URL and log."""
    port = free_port()
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "gateway", *request.param(port, tmp_path)]
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    # Soft and hard, so the server cannot raise it; whether before or after it tried, new descriptors are bound by it.
    resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url) or process.poll() is not None, "switchboard serve to start", PROCESS_S)
        assert process.poll() is None, log.read_text(errors="replace")
        yield url, log
    finally:
        stop_process(process)


def test_out_of_descriptors_slow_clients_are_cut_and_the_log_stays_small(starved_server: tuple[str, Path]) -> None:
    url, log = starved_server
    port = int(url.rsplit(":", 1)[1])
    slow = [_slow_client(port) for _ in range(SLOW_CLIENTS)]
    try:
        cut = _wait_until_cut(slow)
    finally:
        for sock in slow:
            sock.close()
    assert len(cut) == SLOW_CLIENTS, f"only {len(cut)} of {SLOW_CLIENTS} slow clients were cut in {CUT_WITHIN_S:g} s"
    answered = [answer for answer in cut.values() if answer]
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answered), {a[:40] for a in answered}
    wait_until(lambda: _answers(url), "a normal client to be answered once the slow ones are cut", PROCESS_S)
    text = log.read_text(errors="replace")
    assert log.stat().st_size < LOG_BOUND, f"the log grew to {log.stat().st_size} bytes: {text[:2000]}"
    assert "Traceback" not in text, text[:2000]
    assert text.count("accepting paused") >= 1, text[:2000]


def _slow_client(port: int) -> socket.socket:
    """A connection that sends part of its headers and never the rest."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=PROCESS_S)
    sock.sendall(SLOW_HEAD)
    sock.setblocking(False)
    return sock


def _wait_until_cut(slow: list[socket.socket]) -> dict[socket.socket, bytes]:
    """What each slow client read until the server closed it (a reset reads as nothing), within CUT_WITHIN_S.

    Each is closed as soon as the server closed it, as a client does, so its descriptor is
    the server's again."""
    received = dict.fromkeys(slow, b"")
    cut: dict[socket.socket, bytes] = {}
    deadline = time.monotonic() + CUT_WITHIN_S
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


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/.well-known/agent.json", timeout=5).status_code == 200
    except httpx.TransportError:
        return False
