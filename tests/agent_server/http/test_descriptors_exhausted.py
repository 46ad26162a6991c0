"""A server out of file descriptors (agent_server.http.server): slow clients are still cut on their
timeouts, accepting pauses without a log line per attempt, and normal clients get through after.

The server is a real process, an agent server or a gateway, at an open-file limit it cannot
raise (tests/support/starved_server.py), and more slow clients than it has descriptors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_server.http.loopback import free_port
from tests.support import starved_server as starved
from tests.support.waiting import PROCESS_S, wait_until

OPEN_FILES = 256
SLOW_CLIENTS = 400
HEADER_TIMEOUT_S = 1.0
CUT_WITHIN_S = 60.0
LOG_BOUND = 16 * 1024


@pytest.fixture(params=[starved.agent_server_args, starved.gateway_args], ids=["agent_server", "gateway"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An agent server or a gateway with a 1 s header timeout at OPEN_FILES; yields its URL and log."""
    args: Callable[..., list[str]] = request.param
    log = tmp_path / "server.log"
    port = free_port()
    with starved.starved_server(args(port, tmp_path, HEADER_TIMEOUT_S, None), port, OPEN_FILES, log) as url:
        yield url, log


def test_out_of_descriptors_slow_clients_are_cut_and_the_log_stays_small(server: tuple[str, Path]) -> None:
    url, log = server
    port = int(url.rsplit(":", 1)[1])
    slow = [starved.slow_client(port) for _ in range(SLOW_CLIENTS)]
    try:
        cut = starved.wait_until_cut(slow, CUT_WITHIN_S)
    finally:
        for sock in slow:
            sock.close()
    assert len(cut) == SLOW_CLIENTS, f"only {len(cut)} of {SLOW_CLIENTS} slow clients were cut in {CUT_WITHIN_S:g} s"
    answered = [answer for answer in cut.values() if answer]
    assert all(answer.startswith(b"HTTP/1.1 408") for answer in answered), {a[:40] for a in answered}
    wait_until(lambda: starved.answers(url), "a normal client to be answered once the slow ones are cut", PROCESS_S)
    text = log.read_text(errors="replace")
    assert log.stat().st_size < LOG_BOUND, f"the log grew to {log.stat().st_size} bytes: {text[:2000]}"
    assert "Traceback" not in text, text[:2000]
    assert text.count("accepting paused") >= 1, text[:2000]
