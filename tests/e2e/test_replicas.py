"""Two and three gateway processes on one real Redis behave as one swarm, and survive a replica killed mid-run.

The replicas are ``python -m gateway gateway`` processes (tests/support/replicas.py); the
agents they call are real servers on loopback in this process. A local ``assistant``
answers first and hands off to the remote ``stream`` agent (the scripted agent: a message
``stream N INTERVAL COST`` streams N chunks), which makes a turn last as long as a test needs.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from examples.echo import agent as echo_agent
from tests.support.lockstep import Lockstep
from tests.support.redis import LocalRedis
from tests.support.replicas import Replica, lines_of, replica_config, replicas
from tests.support.servers import serve_app

pytestmark = pytest.mark.xdist_group("replicas")  # one worker runs them all, on one set of replicas

LEASE_S = 1.0
STREAM_PROBE = Probe()
"""Counts how often the ``stream`` agent's code began, per task."""
STEPS = 6


def _agents(stream_url: str) -> str:
    return (
        '[[agents]]\nname = "assistant"\nhandoffs = ["stream"]\n\n'
        f'[[agents]]\nname = "stream"\nurl = "{stream_url}"\ndescription = "Streams chunks, for the stream command."\n'
    )


@pytest.fixture(scope="module")
def stream_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent("stream", probe=STREAM_PROBE))) as url:
        yield url


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with serve_app(create_app(echo_agent)) as url:
        yield url


@pytest.fixture(scope="module")
def lockstep() -> Iterator[tuple[Lockstep, str]]:
    steps = Lockstep(STEPS)
    with serve_app(create_app(steps.agent("steps"))) as url:
        yield steps, url


@pytest.fixture(scope="module")
def swarm(
    redis_server: LocalRedis, stream_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Replica]]:
    """Three replicas sharing one key prefix of the session's Redis."""
    spec = f"{redis_server.url}/0?prefix=replicas{uuid.uuid4().hex[:8]}"
    with replicas(
        tmp_path_factory.mktemp("swarm"), replica_config(spec, lease_s=LEASE_S, agents=_agents(stream_url)), 3
    ) as started:
        yield started


def test_an_agent_registered_through_one_replica_is_listed_by_the_others_and_used_by_a_turn_there(
    swarm: list[Replica], echo_url: str
) -> None:
    a, b, c = swarm
    with a.client() as http:
        registered = http.post("/agents", json={"url": echo_url})
    assert registered.status_code == 201, registered.text
    for replica in (b, c):
        with replica.client() as http:
            listed = {agent["name"]: agent for agent in http.get("/agents").json()["agents"]}
        assert listed["echo"]["url"] == echo_url and listed["echo"]["handoff_from"] == ["assistant"]
    with b.client() as http:
        events = lines_of(http.post("/sessions/registered/messages", json={"message": "please echo this back"}))
    handoff = next(e for e in events if e["type"] == "handoff")
    assert (handoff["source"], handoff["target"]) == ("assistant", "echo")
    assert events[-1]["type"] == "run_completed" and events[-1]["active_agent_name"] == "echo"
    assert events[-1]["content"] == "please echo this back"
    with c.client() as http:
        again = http.post("/agents", json={"url": echo_url})
    assert again.status_code == 409 and "already registered" in again.json()["error"]["message"]


def test_concurrent_messages_to_one_session_through_different_replicas_run_one_after_another(
    swarm: list[Replica],
) -> None:
    """Each turn streams for about 0.15 s: without a lock across processes they would overlap and lose saves."""
    messages = [f"stream 3 0.05 0.00{n}" for n in range(6)]
    answers: dict[str, httpx.Response] = {}
    barrier = threading.Barrier(len(messages))

    def send(index: int, message: str) -> None:
        with swarm[index % len(swarm)].client() as http:
            barrier.wait(timeout=30)
            answers[message] = http.post("/sessions/shared/messages", json={"message": message, "stream": False})

    threads = [threading.Thread(target=send, args=(n, m)) for n, m in enumerate(messages)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert {m: r.status_code for m, r in answers.items()} == dict.fromkeys(messages, 200), [
        r.text for r in answers.values()
    ]
    with swarm[1].client() as http:
        session = http.get("/sessions/shared").json()
        runs = [lines_of(http.get(f"/runs/{answers[m].json()['run_id']}/events")) for m in messages]
    assert sorted(m["content"] for m in session["history"] if m["role"] == "user") == sorted(messages)
    assert session["version"] == 2 * len(messages) and session["open_run"] is None
    runs.sort(key=lambda events: events[-1]["session_version"])
    assert [events[-1]["session_version"] for events in runs] == [2 * n for n in range(1, len(messages) + 1)]
    for before, after in itertools.pairwise(runs):
        assert before[-1]["timestamp_ms"] <= after[0]["timestamp_ms"], "two turns held the session at once"


def test_a_run_started_on_one_replica_is_followed_live_through_another(
    swarm: list[Replica], lockstep: tuple[Lockstep, str]
) -> None:
    """The agent makes each chunk only once the follower on B has seen the line before: B is live, not replayed."""
    steps, url = lockstep
    a, b, _ = swarm
    with a.client() as http:
        assert http.post("/tools", json={"name": "steps", "agent": url, "mode": "streaming"}).status_code == 201
    with b.client() as http:
        assert http.get("/tools/steps").json()["agent"] == url
    run_ids: queue.Queue[str] = queue.Queue()
    on_a: list[dict[str, Any]] = []

    def call_on_a() -> None:
        with (
            a.client() as http,
            http.stream("POST", "/tools/steps/call", json={"input": "go", "stream": True}) as response,
        ):
            run_ids.put(response.headers["x-run-id"])
            on_a.extend(orjson.loads(line) for line in response.iter_lines() if line)

    caller = threading.Thread(target=call_on_a)
    caller.start()
    try:
        run_id = run_ids.get(timeout=30)
        on_b: list[dict[str, Any]] = []
        with b.client() as http, http.stream("GET", f"/runs/{run_id}/events?follow=1") as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if not line:
                    continue
                event = orjson.loads(line)
                on_b.append(event)
                if event["type"] == "agent_tool_progress":  # the working status, then each chunk
                    steps.seen()
    finally:
        caller.join(timeout=60)
    assert [e["seq"] for e in on_b] == list(range(len(on_b)))
    assert [(e["type"], e.get("kind")) for e in on_b] == [
        ("agent_tool_invoked", None),
        ("agent_tool_progress", "status"),
        *[("agent_tool_progress", "artifact")] * STEPS,
        ("agent_tool_completed", None),
    ]
    assert on_b == on_a


def test_a_replica_killed_mid_run_leaves_the_run_to_another_which_resumes_and_finishes_it_for_its_follower(
    redis_server: LocalRedis, stream_url: str, tmp_path: Path
) -> None:
    spec = f"{redis_server.url}/0?prefix=kill{uuid.uuid4().hex[:8]}"
    with replicas(tmp_path, replica_config(spec, lease_s=LEASE_S, agents=_agents(stream_url)), 2) as (a, b):
        killed_wall = time.time()
        acknowledged, followed, _, _ = kill_mid_run(a, b, "victim", deltas_before_kill=8)
        assert [e["seq"] for e in followed] == list(range(len(followed))), "no gap, no duplicate"
        assert followed[: len(acknowledged)] == acknowledged, "every event A's client received is there"
        resumed = [e for e in followed if e["type"] == "run_resumed"]
        assert len(resumed) == 1 and resumed[0]["step"] == "reattached" and resumed[0]["agent"] == "stream"
        assert resumed[0]["timestamp_ms"] / 1000 - killed_wall < 30 * LEASE_S, "resumed within a few leases"
        calls = [e for e in followed if e["type"] == "agent_tool_invoked"]
        assert len(calls) == 1 and STREAM_PROBE.starts(calls[0]["task_id"]) == 1, "the remote task ran once"
        assert followed[-1]["type"] == "run_completed"
        assert followed[-1]["content"] == "".join(f"chunk-{index} " for index in range(400))
        with b.client() as http:
            answer = http.post("/sessions/victim/messages", json={"message": "stream 2 0 0", "stream": False})
            session = http.get("/sessions/victim").json()
        assert answer.status_code == 200, answer.text
        assert answer.json()["content"].strip() == "chunk-0 chunk-1"
        assert [m["content"] for m in session["history"] if m["role"] == "user"] == [
            "stream 400 0.02 0",
            "stream 2 0 0",
        ]
        assert session["open_run"] is None


def kill_mid_run(
    a: Replica, b: Replica, session_id: str, *, deltas_before_kill: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], float, float]:
    """Start a long turn on A, follow it through B, SIGKILL A after its client saw ``deltas_before_kill`` deltas.

    Returns what A's client received (every one of those events was appended before A sent it),
    what B's follower received through the close, and when A was killed and B's follower ended.
    """
    acknowledged: list[dict[str, Any]] = []
    followed: list[dict[str, Any]] = []
    ended = threading.Event()
    with (
        a.client() as http_a,
        http_a.stream("POST", f"/sessions/{session_id}/messages", json={"message": "stream 400 0.02 0"}) as turn,
    ):
        run_id = turn.headers["x-run-id"]

        def follow() -> None:
            with b.client() as http_b, http_b.stream("GET", f"/runs/{run_id}/events?follow=1") as response:
                followed.extend(orjson.loads(line) for line in response.iter_lines() if line)
            ended.set()

        follower = threading.Thread(target=follow)
        follower.start()
        try:
            deltas = 0
            for line in turn.iter_lines():
                if line:
                    acknowledged.append(orjson.loads(line))
                    deltas += acknowledged[-1]["type"] == "text_delta"
                    if deltas >= deltas_before_kill:
                        break
            a.kill()
            killed_at = time.monotonic()
            assert ended.wait(timeout=60), "the follower on B never ended"
            closed_at = time.monotonic()
        finally:
            follower.join(timeout=60)
    return acknowledged, followed, killed_at, closed_at
