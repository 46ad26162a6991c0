"""A run's cancel sent to a replica that does not run it: it reaches the run, and the agent's task, on the other one.

Two ``python -m gateway gateway`` processes share one Redis (tests/support/replicas.py), with
tokens: the run is alice's. The remote ``stream`` agent answers first and streams long
enough for the cancel to find it going; it runs in this process, so its Probe shows
whether its own code saw the cancel.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from tests.support.redis import LocalRedis
from tests.support.replicas import Replica, replica_config, replicas
from tests.support.servers import serve_app
from tests.support.waiting import wait_until

pytestmark = pytest.mark.xdist_group("replicas")  # one worker runs the tests that start replicas

LEASE_S = 1.0
ALICE, BOB = "alice-far-secret", "bob-far-secret"
PROBE = Probe()


@pytest.fixture(scope="module")
def stream_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent("stream", probe=PROBE))) as url:
        yield url


def _config(stream_url: str) -> str:
    """The remote agent answers first; two chat tokens, whose callers own their runs."""
    users = "".join(
        f'[[security.tokens]]\nname = "{name}"\nscope = "chat"\ntoken_env = "FAR_{name.upper()}_TOKEN"\n\n'
        for name in ("alice", "bob")
    )
    return f'[[agents]]\nname = "stream"\nurl = "{stream_url}"\n\n{users}'


def _client(replica: Replica, token: str) -> httpx.Client:
    return httpx.Client(base_url=replica.url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def _followed(replica: Replica, run_id: str) -> list[dict[str, Any]]:
    with _client(replica, ALICE) as http, http.stream("GET", f"/runs/{run_id}/events?follow=1") as response:
        return [orjson.loads(line) for line in response.iter_lines() if line]


def test_a_cancel_sent_to_the_replica_that_does_not_run_the_turn_reaches_it_and_the_agent_s_task(
    redis_server: LocalRedis, stream_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAR_ALICE_TOKEN", ALICE)
    monkeypatch.setenv("FAR_BOB_TOKEN", BOB)
    spec = f"{redis_server.url}/0?prefix=farcancel{uuid.uuid4().hex[:8]}"
    with replicas(tmp_path, replica_config(spec, lease_s=LEASE_S, agents=_config(stream_url)), 2) as (a, b):
        with (
            _client(a, ALICE) as http_a,
            http_a.stream("POST", "/sessions/far/messages", json={"message": "stream 1000 0.02 0"}) as turn,
        ):
            run_id = turn.headers["x-run-id"]
            task_id = next(
                event["task_id"]
                for line in turn.iter_lines()
                if line and (event := orjson.loads(line))["type"] == "agent_tool_invoked"
            )
            wait_until(lambda: PROBE.started_at(task_id) is not None, "the agent to start the task")
            with _client(b, BOB) as bob:
                assert bob.post(f"/runs/{run_id}/cancel").status_code == 404, "bob does not see alice's run"
            with _client(b, ALICE) as alice:
                cancelled = alice.post(f"/runs/{run_id}/cancel")
            assert cancelled.status_code == 202, cancelled.text
            assert cancelled.json() == {"run_id": run_id, "cancel": "requested", "on": "another replica"}
            followed = _followed(b, run_id)
        types = [event["type"] for event in followed]
        assert "run_cancelled" in types and types[-1] == "run_failed", types
        note = followed[types.index("run_cancelled")]
        assert (note["by"], note["cause"]) == ("alice", "api")
        assert followed[-1]["error"] == "cancelled: asked by alice"
        terminated = next(event for event in followed if event["type"] == "agent_tool_terminated")
        assert terminated["reason"] == "cancelled" and terminated["cancel_sent"] is True
        assert PROBE.wait_canceled(task_id, timeout_s=30) is not None, "the agent's code saw the cancel"
        assert sum(event["type"] == "text_delta" for event in followed) < 1000, "the turn did not run to its end"
        with _client(b, ALICE) as alice:
            again = alice.post(f"/runs/{run_id}/cancel")
        assert again.status_code == 409 and "already ended" in again.json()["error"]["message"]
