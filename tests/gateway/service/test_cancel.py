"""``POST /runs/{id}/cancel`` and ``cancel_on_disconnect``: the run ends, and the agent's task with it.

A gateway with tokens in front of a scripted agent server, both on loopback. What the
cancel must show: the agent's own code saw the cancellation (the Probe), the engine's
``agent_tool_terminated`` says its cancel was sent and acknowledged, ``run_cancelled`` says
who asked; another caller's run is 404, an ended run 409.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from agent_server import Principal, TokenTable
from agent_server.testing import Probe, scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import agent_server, remote_first_service
from tests.support.hops import cancel_once_invoked
from tests.support.servers import serve_app
from tests.support.waiting import wait_until

ALICE, BOB, ROOT = "alice-secret", "bob-secret", "root-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat"), ROOT: Principal("root")})


@pytest.fixture(scope="module")
def probe() -> Probe:
    return Probe()


@pytest.fixture(scope="module")
def agent_url(probe: Probe) -> Iterator[str]:
    with agent_server(scripted_agent("slow", probe)) as url:
        yield url


@pytest.fixture(scope="module")
def gateway(agent_url: str) -> Iterator[str]:
    with serve_app(create_gateway_app(remote_first_service(agent_url), tokens=TOKENS)) as url:
        with _client(url, ROOT) as root:
            created = root.post("/tools", json={"name": "slow_tool", "agent": agent_url, "mode": "streaming"})
        assert created.status_code == 201, created.text
        yield url


def _client(url: str, token: str = ALICE) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def _events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line:
            yield orjson.loads(line)


def _run_events(http: httpx.Client, run_id: str) -> list[dict[str, Any]]:
    with http.stream("GET", f"/runs/{run_id}/events", params={"follow": 1}) as response:
        return list(_events(response))


def test_a_turn_cancelled_by_its_owner_cancels_the_agents_task_and_says_who(gateway: str, probe: Probe) -> None:
    with (
        _client(gateway) as http,
        http.stream("POST", "/sessions/cancel-me/messages", json={"message": "sleep"}) as response,
    ):
        run_id = response.headers["x-run-id"]
        task_ids: list[str] = []
        for event in _events(response):
            if event["type"] == "agent_tool_invoked":
                task_ids.append(event["task_id"])
                wait_until(lambda: probe.started_at(task_ids[0]) is not None, "the agent to start the task")
                with _client(gateway, BOB) as bob:
                    assert bob.post(f"/runs/{run_id}/cancel").status_code == 404, "bob does not see alice's run"
                cancelled = http.post(f"/runs/{run_id}/cancel")
                assert cancelled.status_code == 202, cancelled.text
        events = _run_events(http, run_id)
    types = [event["type"] for event in events]
    assert "run_cancelled" in types and types[-1] == "run_failed", types
    note = events[types.index("run_cancelled")]
    assert note["by"] == "alice" and note["cause"] == "api"
    assert events[-1]["error"] == "cancelled: asked by alice"
    terminated = next(event for event in events if event["type"] == "agent_tool_terminated")
    assert terminated["reason"] == "cancelled" and terminated["cancel_sent"] is True
    assert terminated["cancel_acknowledged"] is True
    assert probe.wait_canceled(task_ids[0], timeout_s=30) is not None, "the agent's code saw the cancel"
    with _client(gateway) as http:
        again = http.post(f"/runs/{run_id}/cancel")
    assert again.status_code == 409 and "already ended" in again.json()["error"]["message"]


def test_a_tool_call_cancelled_by_an_admin_sends_the_agent_its_cancel(gateway: str, probe: Probe) -> None:
    body = {"input": "sleep", "stream": True}
    with _client(gateway) as http, _client(gateway, ROOT) as root:
        _, events, task_id = cancel_once_invoked(
            http, "/tools/slow_tool/call", body, lambda task: probe.started_at(task) is not None, root
        )
    types = [event["type"] for event in events]
    assert types[-2:] == ["run_cancelled", "agent_tool_terminated"], types
    assert events[-2]["by"] == "root"
    assert events[-1]["reason"] == "cancelled" and events[-1]["cancel_acknowledged"] is True
    assert probe.wait_canceled(task_id, timeout_s=30) is not None


def test_an_unknown_run_is_404(gateway: str) -> None:
    with _client(gateway) as http:
        assert http.post("/runs/run_nope/cancel").status_code == 404


def test_a_streamed_turn_whose_client_leaves_is_cancelled_when_it_asked(gateway: str, probe: Probe) -> None:
    body = {"message": "sleep", "cancel_on_disconnect": True}
    task_ids: list[str] = []
    with _client(gateway) as http:
        with http.stream("POST", "/sessions/leaving/messages", json=body) as response:
            run_id = response.headers["x-run-id"]
            for event in _events(response):
                if event["type"] == "agent_tool_invoked":
                    task_ids.append(event["task_id"])
                    wait_until(lambda: probe.started_at(task_ids[0]) is not None, "the agent to start the task")
                    break
        events = _run_events(http, run_id)
    note = next(event for event in events if event["type"] == "run_cancelled")
    assert note["cause"] == "disconnect" and note["by"] == "alice"
    assert events[-1]["type"] == "run_failed"
    assert probe.wait_canceled(task_ids[0], timeout_s=30) is not None


def test_cancel_on_disconnect_needs_a_stream(gateway: str) -> None:
    with _client(gateway) as http:
        refused = http.post(
            "/sessions/x/messages", json={"message": "hi", "stream": False, "cancel_on_disconnect": True}
        )
    assert refused.status_code == 400 and "stream: true" in refused.text
