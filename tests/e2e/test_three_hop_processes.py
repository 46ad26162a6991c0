"""A -> B -> C where B and C are processes of their own (``switchboard serve``), killed-and-all real: what the top
asks reaches the bottom through a process boundary at each hop.

B's handler calls C through a ``Gateway`` (tests/support/hops.py ``relay_agent``); C is the
scripted agent. Only what crosses the wire is read: A's events, and C's tasks through its
standard ``ListTasks``. A cancel of A's run ends C's task ``canceled``; the budget set on A's
tool stops C, and A sees C's spend once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_server.http.loopback import free_port
from tests.support.gateway_service import gateway_server, triage_service
from tests.support.hops import cancel_once_invoked
from tests.support.processes import stop_process
from tests.support.waiting import PROCESS_S, wait_until

ROOT = Path(__file__).resolve().parents[2]
BUDGET_USD = 0.05
C_AGENT = "from agent_server.testing import scripted_agent\n\nagent = scripted_agent('c')\n"
B_AGENT = (
    "import os\n\nfrom tests.support.hops import Relayed, relay_agent\n\n"
    "agent = relay_agent(os.environ['C_URL'], Relayed())\n"
)


@contextmanager
def served(tmp_path: Path, name: str, source: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """``switchboard serve`` of the agent ``source`` defines, as a process; its URL once its card answers."""
    path = tmp_path / f"{name}_agent.py"
    path.write_text(source, encoding="utf-8")
    port = free_port()
    command = [sys.executable, "-m", "gateway", "serve", f"{path}:agent", "--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(
        command, cwd=ROOT, env={**_environ(), **(env or {})}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _answers(url) or process.poll() is not None, f"{name} to serve", PROCESS_S)
        assert process.poll() is None, f"{name} exited"
        yield url
    finally:
        stop_process(process)


def _environ() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/.well-known/agent-card.json", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _c_tasks(c_url: str) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    answer = httpx.post(c_url, json=body, headers={"A2A-Version": "1.0"}, timeout=30)
    tasks: list[dict[str, Any]] = answer.json()["result"].get("tasks", [])
    return tasks


def _states(c_url: str) -> list[str]:
    return [task["status"]["state"] for task in _c_tasks(c_url)]


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[tuple[httpx.Client, str]]:
    with ExitStack() as stack:
        c_url = stack.enter_context(served(tmp_path, "c", C_AGENT))
        b_url = stack.enter_context(served(tmp_path, "b", B_AGENT, {"C_URL": c_url}))
        a_url = stack.enter_context(gateway_server(triage_service()))
        http = stack.enter_context(httpx.Client(base_url=a_url, timeout=60))
        for name, mode, extra in (
            ("ask_b", "streaming", {}),
            ("ask_b_sync", "sync", {"max_cost_usd": BUDGET_USD, "timeout_ms": 120_000}),
        ):
            created = http.post("/tools", json={"name": name, "agent": b_url, "mode": mode, **extra, "attach_to": []})
            assert created.status_code == 201, created.text
        yield http, c_url


def test_a_cancel_at_a_ends_cs_task_across_two_process_boundaries(chain: tuple[httpx.Client, str]) -> None:
    http, c_url = chain
    _, a_events, _ = cancel_once_invoked(
        http,
        "/tools/ask_b/call",
        {"input": "sleep", "stream": True},
        lambda _: _states(c_url) == ["TASK_STATE_WORKING"],  # C runs B's task
        http,
    )
    assert a_events[-1]["type"] == "agent_tool_terminated" and a_events[-1]["cancel_acknowledged"] is True
    wait_until(lambda: _states(c_url) == ["TASK_STATE_CANCELED"], "C's task to end canceled", PROCESS_S)


def test_the_budget_set_at_a_stops_c_in_its_own_process(chain: tuple[httpx.Client, str]) -> None:
    http, c_url = chain
    answer = http.post("/tools/ask_b_sync/call", json={"input": "stream 1000 0.01 0.01"})
    assert answer.status_code == 502, answer.text
    data = answer.json()["error"]["data"]
    assert data["reason"] == "budget_exceeded"
    assert BUDGET_USD < data["partial"]["cost_usd"] <= BUDGET_USD + 0.01, "C's spend, counted once"
    wait_until(lambda: _states(c_url) == ["TASK_STATE_CANCELED"], "C to be stopped", PROCESS_S)
