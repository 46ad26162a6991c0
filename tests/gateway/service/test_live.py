"""The gateway service end to end: live NDJSON, replay after a drop, a gateway as another's agent, a restart."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from gateway import Agent, MemoryEventLog, MemorySessionStore
from gateway.config.load import validate_config
from gateway.service import GatewayService, create_gateway_app
from tests.support.gateway_service import (
    agent_server,
    client,
    gateway_server,
    lines_of,
    remote_first_service,
)
from tests.support.lockstep import Lockstep
from tests.support.servers import serve_app


@pytest.fixture(scope="module")
def slow_gateway(scripted_url: str) -> Iterator[str]:
    """The starting agent is the scripted remote agent: ``stream N INTERVAL`` makes it answer slowly."""
    with gateway_server(remote_first_service(scripted_url)) as url:
        yield url


@contextmanager
def _lockstep_gateway(lockstep: Lockstep) -> Iterator[str]:
    """A gateway whose starting agent is remote and streams in lockstep with what the test reads."""
    with (
        agent_server(lockstep.agent()) as agent_url,
        gateway_server(remote_first_service(agent_url, "lockstep")) as url,
    ):
        yield url


def _events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    return (orjson.loads(line) for line in response.iter_lines() if line)


def _lets_the_agent_go_on(event: dict[str, Any]) -> bool:
    """The lines the lockstep agent waits for: the run's start, then each chunk of its text."""
    return event["type"] in ("run_started", "text_delta")


def test_a_messages_events_arrive_while_the_run_is_going() -> None:
    """The agent makes each chunk only once the client has seen the line before: run_started, then each delta."""
    lockstep = Lockstep(chunks=6)
    events: list[dict[str, Any]] = []
    with _lockstep_gateway(lockstep) as url, client(url) as http:
        with http.stream("POST", "/sessions/live/messages", json={"message": "go"}) as response:
            assert response.status_code == 200
            for event in _events(response):
                events.append(event)
                if _lets_the_agent_go_on(event):
                    lockstep.seen()
    kinds = [event["type"] for event in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed" and kinds.count("text_delta") == 6
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "".join(f"chunk-{i} " for i in range(6))


def test_after_a_dropped_connection_the_missing_events_are_replayed_then_followed() -> None:
    """The agent goes on only as the test reads its chunks: the run ends only if the resumed stream follows it live."""
    lockstep = Lockstep(chunks=8)
    with _lockstep_gateway(lockstep) as url, client(url) as http:
        seen: list[dict[str, Any]] = []
        with http.stream("POST", "/sessions/drop/messages", json={"message": "go"}) as response:
            run_id = response.headers["x-run-id"]
            for event in _events(response):
                seen.append(event)
                if _lets_the_agent_go_on(event):
                    lockstep.seen()
                if [e["type"] for e in seen].count("text_delta") == 2:
                    break  # leaving the block drops the connection mid-run
        runs = {r["run_id"]: r for r in http.get("/runs").json()["runs"]}
        assert runs[run_id]["closed"] is False  # the run went on without its client
        last = seen[-1]["seq"]
        rest: list[dict[str, Any]] = []
        with http.stream("GET", f"/runs/{run_id}/events", params={"after_seq": last, "follow": 1}) as resumed:
            for event in _events(resumed):
                rest.append(event)
                if _lets_the_agent_go_on(event):
                    lockstep.seen()
    events = seen + rest
    assert [event["seq"] for event in events] == list(range(len(events)))  # no gap, no duplicate
    assert events[-1]["type"] == "run_completed"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "".join(f"chunk-{i} " for i in range(8))


@pytest.fixture(scope="module")
def gateway_a() -> Iterator[str]:
    helper = Agent("helper", "Answer questions about tides and the moon.")
    service = GatewayService(helper, name="gateway_a", session_store=MemorySessionStore(), event_log=MemoryEventLog())
    with gateway_server(service) as url:
        yield url


def test_gateway_b_hands_off_to_gateway_a_registered_by_url(gateway_a: str, triage_gateway_url: str) -> None:
    with client(triage_gateway_url) as b, client(gateway_a) as a:
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


def test_gateway_b_calls_gateway_a_as_a_streaming_tool(gateway_a: str, triage_gateway_url: str) -> None:
    with client(triage_gateway_url) as b:
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
        assert (
            http.post("/sessions/kept/messages", json={"message": "again", "stream": False}).json()["active_agent_name"]
            == "solo"
        )


def test_a_failed_run_ends_its_stream_with_run_failed_and_its_summary_is_a_502(slow_gateway: str) -> None:
    with client(slow_gateway) as http:
        events = lines_of(http.post("/sessions/failing/messages", json={"message": "fail boom"}))
        assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_failed"
        assert "boom" in events[-1]["error"]
        summary = http.post("/sessions/failing/messages", json={"message": "fail again", "stream": False})
    assert summary.status_code == 502
    error = summary.json()["error"]
    assert (
        error["code"] == -32014
        and "again" in error["message"]
        and error["data"]["run_id"] == summary.headers["x-run-id"]
    )


def test_a_message_without_text_fails_its_task_saying_why_without_a_traceback(
    triage_gateway_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    message = {"role": "ROLE_USER", "messageId": "m-data", "parts": [{"data": {"order": 42}}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    answer = httpx.post(triage_gateway_url, json=body, headers={"A2A-Version": "1.0"})
    status = answer.json()["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert status["message"]["parts"][0]["text"] == "the message has no text: send the user's words as a text part"
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_a_turn_whose_remote_agent_asks_a_question_ends_input_required(slow_gateway: str) -> None:
    with httpx.Client(base_url=slow_gateway, timeout=30) as http:
        asked = http.post("/sessions/q1/messages", json={"message": "ask which colour?", "stream": False}).json()
        assert asked["state"] == "input-required", "the agent asked: the turn waits for the user, it is not done"
        assert asked["content"] == "which colour?"
        answered = http.post("/sessions/q1/messages", json={"message": "blue", "stream": False}).json()
        assert answered["state"] == "completed" and answered["content"] == "got: blue"
