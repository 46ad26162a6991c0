"""``historyLength`` on every binding: at most that many of the newest messages, all of them when there are fewer.

A 2-message task (the question and the answer) asked for 3 gives both; 0 gives none (v1.0
leaves ``history`` out, as the specification says it should be omitted).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.a2a_clients import V1, rpc


@pytest.fixture
def http(scripted_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=scripted_url, timeout=30) as client:
        yield client


def v1_send(text: str, **configuration: Any) -> dict[str, Any]:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}], "contextId": "history-ctx"}
    return {"message": message, **({"configuration": configuration} if configuration else {})}


def texts(task: dict[str, Any]) -> list[str]:
    return [part.get("text", "") for message in task.get("history") or [] for part in message["parts"]]


def test_ndjson_get_longer_than_the_history_gives_all_of_it(http: httpx.Client) -> None:
    body = {"id": "hl-ndjson", "message": {"role": "user", "parts": [{"type": "text", "text": "echo hi"}]}}
    sent = http.post("/tasks/send", json={**body, "historyLength": 3}).json()
    assert texts(sent) == ["echo hi", "hi"]
    assert texts(http.post("/tasks/get", json={"id": "hl-ndjson", "historyLength": 3}).json()) == ["echo hi", "hi"]
    assert texts(http.get("/tasks/hl-ndjson", params={"historyLength": 5}).json()) == ["echo hi", "hi"]
    assert texts(http.post("/tasks/get", json={"id": "hl-ndjson", "historyLength": 1}).json()) == ["hi"]
    assert http.post("/tasks/get", json={"id": "hl-ndjson", "historyLength": 0}).json()["history"] == []


def test_jsonrpc_send_get_and_list_longer_than_the_history_give_all_of_it(http: httpx.Client) -> None:
    sent = http.post("/", json=rpc("SendMessage", v1_send("echo yo", historyLength=3)), headers=V1).json()
    task = sent["result"]["task"]
    assert texts(task) == ["echo yo", "yo"]
    got = http.post("/", json=rpc("GetTask", {"id": task["id"], "historyLength": 3}), headers=V1).json()
    assert texts(got["result"]) == ["echo yo", "yo"]
    listed = http.post("/", json=rpc("ListTasks", {"contextId": "history-ctx", "historyLength": 7}), headers=V1).json()
    assert [texts(each) for each in listed["result"]["tasks"]] == [["echo yo", "yo"]]
    legacy = http.post("/", json=rpc("tasks/get", {"id": task["id"], "historyLength": 4})).json()
    assert texts(legacy["result"]) == ["echo yo", "yo"]


def test_jsonrpc_history_length_zero_leaves_the_history_out(http: httpx.Client) -> None:
    sent = http.post("/", json=rpc("SendMessage", v1_send("echo zero", historyLength=0)), headers=V1).json()
    task = sent["result"]["task"]
    assert "history" not in task
    got = http.post("/", json=rpc("GetTask", {"id": task["id"], "historyLength": 0}), headers=V1).json()
    assert "history" not in got["result"]
    assert texts(http.post("/", json=rpc("GetTask", {"id": task["id"]}), headers=V1).json()["result"]) == [
        "echo zero",
        "zero",
    ]
