"""The gateway service end to end: live NDJSON, replay after a drop, a gateway as another's agent, a restart."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gateway_service_support import (
    agent_server,
    client,
    gateway_server,
    lines_of,
    remote_first_service,
    timed_lines,
    triage_service,
)
from servers import serve_app

from gateway import Agent, MemoryEventLog, MemorySessionStore
from gateway.config import validate_config
from gateway.service import GatewayService, create_gateway_app


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    with agent_server() as url:
        yield url


@pytest.fixture(scope="module")
def slow_gateway(scripted_url: str) -> Iterator[str]:
    """The starting agent is the scripted remote agent: ``stream N INTERVAL`` makes it answer slowly."""
    with gateway_server(remote_first_service(scripted_url)) as url:
        yield url


def test_a_messages_events_arrive_while_the_run_is_going(slow_gateway: str) -> None:
    with client(slow_gateway) as http, http.stream("POST", "/sessions/live/messages", json={"message": "stream 6 0.1"}) as response:
        assert response.status_code == 200
        arrivals = timed_lines(response)
    kinds = [event["type"] for _, event in arrivals]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed" and kinds.count("text_delta") == 6
    deltas = [at for at, event in arrivals if event["type"] == "text_delta"]
    assert arrivals[-1][0] - deltas[0] >= 0.35  # the first chunk was shown ~0.5 s before the run ended
    assert sum(1 for a, b in zip(deltas, deltas[1:]) if b - a >= 0.05) >= 4  # one by one, not in a burst
    assert arrivals[0][0] < deltas[0] - 0.05  # run_started came before the remote agent said anything


def test_after_a_dropped_connection_the_missing_events_are_replayed_then_followed(slow_gateway: str) -> None:
    with client(slow_gateway) as http:
        seen: list[dict] = []
        with http.stream("POST", "/sessions/drop/messages", json={"message": "stream 8 0.1"}) as response:
            run_id = response.headers["x-run-id"]
            for _, event in timed_lines_until(response, lambda e: e["type"] == "text_delta", count=2):
                seen.append(event)
        runs = {r["run_id"]: r for r in http.get("/runs").json()["runs"]}
        assert runs[run_id]["closed"] is False  # the run went on without its client
        last = seen[-1]["seq"]
        with http.stream("GET", f"/runs/{run_id}/events", params={"after_seq": last, "follow": 1}) as resumed:
            rest = timed_lines(resumed)
    events = seen + [event for _, event in rest]
    assert [event["seq"] for event in events] == list(range(len(events)))  # no gap, no duplicate
    assert events[-1]["type"] == "run_completed"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "".join(f"chunk-{i} " for i in range(8))
    assert rest[-1][0] - rest[0][0] >= 0.2  # the tail was followed live, not read after the fact


def timed_lines_until(
    response: httpx.Response, wanted: Callable[[dict[str, Any]], bool], count: int
) -> list[tuple[float, dict[str, Any]]]:
    """Read lines until ``count`` of them matched ``wanted``; the rest stay unread (the connection is dropped)."""
    out: list[tuple[float, dict[str, Any]]] = []
    matched = 0
    for line in response.iter_lines():
        if not line:
            continue
        event = orjson.loads(line)
        out.append((time.monotonic(), event))
        matched += wanted(event)
        if matched >= count:
            break
    return out


@pytest.fixture(scope="module")
def gateway_a() -> Iterator[str]:
    helper = Agent("helper", "Answer questions about tides and the moon.")
    service = GatewayService(helper, name="gateway_a", session_store=MemorySessionStore(), event_log=MemoryEventLog())
    with gateway_server(service) as url:
        yield url


def test_gateway_b_hands_off_to_gateway_a_registered_by_url(gateway_a: str) -> None:
    with gateway_server(triage_service()) as b_url, client(b_url) as b, client(gateway_a) as a:
        registered = b.post("/agents", json={"url": gateway_a})
        assert registered.status_code == 201 and registered.json()["name"] == "gateway_a"
        events = lines_of(b.post("/sessions/b-1/messages", json={"message": "a question about tides and the moon"}))
        handoffs = [e for e in events if e["type"] == "handoff"]
        assert [(h["source"], h["target"], h["remote"]) for h in handoffs] == [("triage", "gateway_a", True)]
        remote_text = "".join(e["text"] for e in events if e["type"] == "text_delta" and e["agent"] == "gateway_a")
        assert events[-1]["type"] == "run_completed" and events[-1]["active_agent_name"] == "gateway_a"
        assert remote_text and events[-1]["content"] == remote_text
        a_session = a.get("/sessions/b-1").json()  # A ran its own swarm on B's session id
        assert a_session["active_agent"] == "helper" and a_session["history"][-1]["content"] == remote_text
        a_runs = [r for r in a.get("/runs").json()["runs"] if r["session_id"] == "b-1"]
        assert len(a_runs) == 1 and a_runs[0]["agent"] == "helper"


def test_gateway_b_calls_gateway_a_as_a_streaming_tool(gateway_a: str) -> None:
    with gateway_server(triage_service()) as b_url, client(b_url) as b:
        assert b.post("/tools", json={"name": "ask_a", "agent": gateway_a, "mode": "streaming"}).status_code == 201
        result = b.post("/tools/ask_a/call", json={"input": "how high is the tide"}).json()["result"]
        assert result["state"] == "completed" and "how high is the tide" in result["text"] and result["chunks"] >= 3


def test_with_sqlite_stores_runs_and_sessions_survive_a_restart(tmp_path: Path) -> None:
    config = validate_config({"gateway": {"data_dir": str(tmp_path / "data")}, "agents": [{"name": "solo"}]})
    with serve_app(create_gateway_app(config)) as url, client(url) as http:
        first = http.post("/sessions/kept/messages", json={"message": "remember me"})
        run_id = first.headers["x-run-id"]
        events = lines_of(first)
    assert {p.name for p in (tmp_path / "data").iterdir()} >= {"events.db", "sessions.db"}
    with serve_app(create_gateway_app(config)) as url, client(url) as http:
        assert lines_of(http.get(f"/runs/{run_id}/events")) == events
        assert http.get("/sessions/kept").json()["history"][0]["content"] == "remember me"
        assert http.post("/sessions/kept/messages", json={"message": "again", "stream": False}).json()["active_agent_name"] == "solo"


def test_a_failed_run_ends_its_stream_with_run_failed_and_its_summary_is_a_502(slow_gateway: str) -> None:
    with client(slow_gateway) as http:
        events = lines_of(http.post("/sessions/failing/messages", json={"message": "fail boom"}))
        assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_failed"
        assert "boom" in events[-1]["error"]
        summary = http.post("/sessions/failing/messages", json={"message": "fail again", "stream": False})
    assert summary.status_code == 502
    error = summary.json()["error"]
    assert error["code"] == -32014 and "again" in error["message"] and error["data"]["run_id"] == summary.headers["x-run-id"]
