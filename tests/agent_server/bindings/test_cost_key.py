"""A cost on the standard bindings is ``metadata.costUsd``, camelCase like every key there; NDJSON keeps ``cost_usd``.

Written as ``costUsd`` on JSON-RPC v1.0 and v0.3 (each stream event's own cost, the task's
total); read as either spelling, so agents that send ``cost_usd`` are still counted. The
NDJSON binding's clients read ``cost_usd``, which it keeps.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest

from protocol.a2a import StreamDecoder, task_from_v1, v1
from tests.support.a2a_clients import V1, rpc, sse_results


@pytest.fixture
def http(scripted_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=scripted_url, timeout=30) as client:
        yield client


def test_v1_streams_and_tasks_carry_cost_usd_in_camel_case(http: httpx.Client) -> None:
    params = {"message": {"messageId": "c1", "role": "ROLE_USER", "parts": [{"text": "stream 2 0 0.25"}]}}
    events = sse_results(http.post("/", json=rpc("SendStreamingMessage", params), headers=V1))
    chunks = [event["artifactUpdate"] for event in events if "artifactUpdate" in event]
    assert [chunk["metadata"] for chunk in chunks] == [{"costUsd": 0.25}, {"costUsd": 0.25}]
    task_id = events[0]["task"]["id"]
    task = http.post("/", json=rpc("GetTask", {"id": task_id}), headers=V1).json()["result"]
    assert task["metadata"]["costUsd"] == pytest.approx(0.5) and "cost_usd" not in task["metadata"]
    assert "cost_usd" not in orjson.dumps(events).decode()


def test_v03_streams_and_tasks_carry_cost_usd_in_camel_case(http: httpx.Client) -> None:
    message = {
        "kind": "message",
        "messageId": "c2",
        "role": "user",
        "parts": [{"kind": "text", "text": "stream 1 0 0.5"}],
    }
    events = sse_results(http.post("/", json=rpc("message/stream", {"message": message})))
    [chunk] = [event for event in events if event["kind"] == "artifact-update"]
    assert chunk["metadata"] == {"costUsd": 0.5}
    task = http.post("/", json=rpc("tasks/get", {"id": events[0]["id"]})).json()["result"]
    assert task["metadata"]["costUsd"] == pytest.approx(0.5) and "cost_usd" not in task["metadata"]


def test_ndjson_keeps_cost_usd(http: httpx.Client) -> None:
    body = {"message": {"role": "user", "parts": [{"type": "text", "text": "stream 1 0 0.5"}]}}
    lines = [orjson.loads(line) for line in http.post("/tasks/sendSubscribe", json=body).text.splitlines()]
    assert [line["cost_usd"] for line in lines if line["type"] == "artifact"] == [0.5]
    task = http.post("/tasks/get", json={"id": lines[0]["id"]}).json()
    assert task["metadata"]["cost_usd"] == pytest.approx(0.5)


@pytest.mark.parametrize("key", ["costUsd", "cost_usd"])
def test_a_cost_is_read_in_either_spelling(key: str) -> None:
    chunk = {"taskId": "t", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "metadata": {key: 0.5}}
    [event] = StreamDecoder().decode(v1.StreamResponse.model_validate({"artifactUpdate": chunk}))
    assert event.cost_usd == 0.5
    task = v1.Task.model_validate({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "metadata": {key: 0.5}})
    assert task_from_v1(task).metadata == {"cost_usd": 0.5}
