"""``switchboard events --session ID --follow`` and ``--all --follow``: runs that have not begun yet, followed.

The gateway runs in this process (offline agents); the command is its own process, piped
(NDJSON) or on a pseudo-terminal (the readable rendering). It must be listening before
the first run exists: the test waits for its first ``GET /runs`` before it posts.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server import create_app
from examples.researcher import make_researcher
from gateway.config.load import validate_config
from gateway.service import create_gateway_app
from tests.support.servers import serve_app
from tests.support.terminal import Terminal
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[3]


class _ListingsSeen:
    """Counts ``GET /runs`` (how the command looks for new runs), passing every request on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == "/runs":
            self.count += 1
        await self.app(scope, receive, send)


@pytest.fixture
def gateway() -> Iterator[tuple[str, _ListingsSeen]]:
    researcher = make_researcher(chunks=3, interval_s=0.01)
    with serve_app(create_app(researcher)) as research_url:
        config = validate_config(
            {
                "stores": {"sessions": "memory", "events": "memory", "tasks": "memory"},
                "agents": [
                    {"name": "triage", "handoffs": ["billing"], "tools": ["research"]},
                    {"name": "billing", "description": "Billing: refunds and double charges."},
                ],
                "tools": [{"name": "research", "agent": research_url, "mode": "streaming", "max_cost_usd": 1.0}],
            }
        )
        app = _ListingsSeen(create_gateway_app(config))
        with serve_app(app) as url:
            yield url, app


def _say(url: str, session: str, message: str) -> str:
    response = httpx.post(f"{url}/sessions/{session}/messages", json={"message": message}, timeout=PROCESS_S)
    assert response.status_code == 200, response.text
    return response.headers["x-run-id"]


def _lines(process: subprocess.Popen[bytes]) -> queue.Queue[bytes]:
    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _next_event(lines: queue.Queue[bytes]) -> dict[str, object]:
    event: dict[str, object] = orjson.loads(lines.get(timeout=PROCESS_S))
    return event


def test_session_follow_started_before_the_run_prints_it_from_its_first_event_and_the_next_run(
    gateway: tuple[str, _ListingsSeen],
) -> None:
    url, app = gateway
    command = [sys.executable, "-m", "gateway", "events", "--session", "s1", "--follow", "--gateway", url]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        lines = _lines(process)
        wait_until(lambda: app.count >= 2, "the command to look for runs twice", PROCESS_S)
        assert process.poll() is None
        _say(url, "other", "hello")
        first = _say(url, "s1", "Please refund my double charge")
        second = _say(url, "s1", "thanks")
        for run_id in (first, second):
            event = _next_event(lines)
            assert (event["type"], event["run_id"], event["seq"]) == ("run_started", run_id, 0)
            while event["type"] != "run_completed":
                event = _next_event(lines)
                assert event["run_id"] == run_id, "one run after the other, nothing of the other session"
    finally:
        process.kill()
        process.wait()


def test_all_follow_on_a_terminal_shows_who_speaks_the_handoff_and_tool_progress_with_cost(
    gateway: tuple[str, _ListingsSeen],
) -> None:
    url, app = gateway
    with Terminal("events", "--all", "--follow", "--gateway", url) as terminal:
        wait_until(lambda: app.count >= 2, "the command to look for runs twice", PROCESS_S)
        _say(url, "t1", "Please research tidal energy")
        terminal.expect(r"\[t1\] ▶ run_\w+ · session t1 · you: Please research tidal energy")
        terminal.expect(r"\[t1\]   ⇢ research: streaming call to http://127\.0\.0\.1:\d+, budget \$1\.0000")
        terminal.expect(r"\[t1\]   ⋯ research: 2 chunks · \$0\.0005 of \$1\.0000 budget")  # rewritten in place
        terminal.expect(r"\[t1\]   ⇠ research: 4 chunks · \$0\.0015 of \$1\.0000 budget · completed")
        terminal.expect(r"\[t1\] triage: Done: \[1/3\]")
        terminal.expect(r"\[t1\] ■ done: triage answered · 0 hops · \d+ in / \d+ out tokens · \$0\.0015")
        _say(url, "t2", "Please refund my double charge")
        terminal.expect(r"\[t2\]   · triage \(offline\): \d+ in / \d+ out tokens, \$0\.0000")
        terminal.expect(r"\[t2\]   triage → billing \(hop 1\)")
        terminal.expect(r"\[t2\] billing: ")
        terminal.expect(r"\[t2\] ■ done: billing answered · 1 hop · ")
        assert "{" not in terminal.screen, "no raw JSON on a terminal"
        assert "budget\r\x1b[2K" in terminal.screen, "a call's progress line is rewritten in place"
