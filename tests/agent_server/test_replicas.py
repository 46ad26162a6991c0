"""Two replicas of one agent on one Redis task store: a task started on one is read, followed and canceled on the other.

Each replica is a real agent server on loopback with its own RedisTaskStore (opened from
the spec, as ``switchboard serve --store redis://...`` does); they share nothing but Redis.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import orjson

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from tests.support.servers import serve_app
from tests.support.waiting import wait_until


def test_a_task_started_on_one_replica_is_read_resubscribed_and_canceled_through_the_other(redis_url: str) -> None:
    probe = Probe()
    with (
        serve_app(create_app(scripted_agent(probe=probe), store=redis_url)) as first,
        serve_app(create_app(scripted_agent(probe=probe), store=redis_url)) as second,
        httpx.Client(timeout=30) as http,
    ):
        on_first: list[dict[str, Any]] = []
        started = threading.Event()

        def subscribe() -> None:
            body = {"id": "shared-task", "message": {"parts": [{"text": "stream 1000 0.02 0"}]}}
            with http.stream("POST", f"{first}/tasks/sendSubscribe", json=body) as response:
                for line in response.iter_lines():
                    if line:
                        on_first.append(orjson.loads(line))
                        started.set()

        streaming = threading.Thread(target=subscribe)
        streaming.start()
        try:
            assert started.wait(timeout=30)
            wait_until(lambda: len(on_first) >= 3, "the task to stream a few chunks on the first replica")
            task = http.post(f"{second}/tasks/get", json={"id": "shared-task"}).json()
            assert task["status"]["state"] == "working", task

            on_second: list[dict[str, Any]] = []
            with http.stream("POST", f"{second}/tasks/resubscribe", json={"id": "shared-task", "afterSeq": 0}) as live:
                for line in live.iter_lines():
                    if not line:
                        continue
                    on_second.append(orjson.loads(line))
                    if len(on_second) == 3:  # the stored ones and a live one: now cancel through the second
                        canceled = http.post(f"{second}/tasks/cancel", json={"id": "shared-task"})
                        assert canceled.status_code == 200, canceled.text
                        assert canceled.json()["status"]["state"] == "canceled"
        finally:
            streaming.join(timeout=30)
        # the first replica's stream may end before its agent's code has finished being cancelled
        wait_until(lambda: probe.canceled_at("shared-task") is not None, "the cancel to reach the agent's code there")
        assert [e["seq"] for e in on_second] == list(range(1, len(on_second) + 1))
        assert on_second[-1]["final"] and on_second[-1]["status"]["state"] == "canceled"
        assert on_first[-1]["final"] and on_first[-1]["status"]["state"] == "canceled"
        assert on_second == on_first[1:], "the second replica's stream is the first's, from seq 1"
        after = http.get(f"{second}/tasks/shared-task").json()
        assert after["status"]["state"] == "canceled"
        assert "".join(p["text"] for a in after["artifacts"] for p in a["parts"]).startswith("chunk-0 chunk-1 ")
