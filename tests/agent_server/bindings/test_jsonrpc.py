"""The JSON-RPC face's own rules, on the wire: versions, error codes, tokens, ownership, limits, never a 5xx.

Raw HTTP against an agent server (the scripted agent) and a gateway with tokens; what a
standard client makes of the answers is test_a2a_sdk_client.py's business.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from agent_server import Principal, TokenTable, create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.servers import serve_app

ALICE, BOB = "alice-secret", "bob-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat")})
V1 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(), max_body_bytes=64 * 1024)) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    with serve_app(create_gateway_app(triage_service(), tokens=TOKENS)) as url:
        yield url


def rpc(method: str, params: Any, rpc_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def send_params(text: str, **ids: str) -> dict[str, Any]:
    return {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}], **ids}}


def error_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "result" not in body, body
    return dict(body["error"])


def test_v1_send_answers_protojson_and_v03_the_same_task_with_kind_and_lowercase_states(agent_url: str) -> None:
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        answer = http.post("/", json=rpc("SendMessage", send_params("echo hi")), headers=V1).json()
        task = answer["result"]["task"]
        assert answer["id"] == 1 and task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"] == [{"text": "hi"}] and task["contextId"]

        legacy_params = {
            "message": {
                "kind": "message",
                "messageId": "m2",
                "role": "user",
                "parts": [{"kind": "text", "text": "echo yo"}],
            }
        }
        legacy = http.post("/", json=rpc("message/send", legacy_params, "x")).json()["result"]
        assert legacy["kind"] == "task" and legacy["status"]["state"] == "completed"
        assert legacy["artifacts"][0]["parts"] == [{"kind": "text", "text": "yo"}]
        got = http.post("/", json=rpc("tasks/get", {"id": legacy["id"]})).json()["result"]
        assert got["id"] == legacy["id"] and got["status"]["state"] == "completed"


def test_a_v03_stream_marks_its_last_status_update_final(agent_url: str) -> None:
    legacy_params = {
        "message": {
            "kind": "message",
            "messageId": "m3",
            "role": "user",
            "parts": [{"kind": "text", "text": "stream 2"}],
        }
    }
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        response = http.post("/", json=rpc("message/stream", legacy_params))
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [orjson.loads(line[6:])["result"] for line in response.text.splitlines() if line.startswith("data: ")]
    assert [e["kind"] for e in events] == ["task", "artifact-update", "artifact-update", "status-update"]
    assert events[-1]["final"] is True and events[-1]["status"]["state"] == "completed"


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        (b"{not json", V1, -32700),
        (b"[]", V1, -32600),
        (orjson.dumps(rpc("NoSuchMethod", {})), V1, -32601),
        (orjson.dumps(rpc("SendMessage", {"message": {"role": "ROLE_USER"}})), V1, -32602),
        (orjson.dumps(rpc("SendMessage", send_params("echo hi"))), {"A2A-Version": "2.0"}, -32009),
        (orjson.dumps(rpc("SendMessage", send_params("echo hi"))), {}, -32009),  # no header: 0.3, a 1.0 method
        (orjson.dumps(rpc("message/send", send_params("echo hi"))), V1, -32009),
        (orjson.dumps(rpc("GetTask", {"id": "nope"})), V1, -32001),
        (orjson.dumps(rpc("CancelTask", {"id": "nope"})), V1, -32001),
        (orjson.dumps(rpc("SendMessage", send_params("echo hi", taskId="nope"))), V1, -32001),
        (orjson.dumps(rpc("CreateTaskPushNotificationConfig", {})), V1, -32602),
    ],
)
def test_bad_input_is_a_jsonrpc_error_with_the_a2a_code(
    agent_url: str, body: bytes, headers: dict[str, str], code: int
) -> None:
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        error = error_of(http.post("/", content=body, headers={"content-type": "application/json", **headers}))
    assert error["code"] == code and error["message"]
    if code == -32001:
        assert error["data"][0]["reason"] == "TASK_NOT_FOUND", "1.0: the ErrorInfo comes first in data"


def test_a_finished_task_is_not_cancelable_and_a_too_large_body_is_refused(agent_url: str) -> None:
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        task = http.post("/", json=rpc("SendMessage", send_params("echo hi")), headers=V1).json()["result"]["task"]
        assert error_of(http.post("/", json=rpc("CancelTask", {"id": task["id"]}), headers=V1))["code"] == -32002
        huge = http.post("/", json=rpc("SendMessage", send_params("x" * 100_000)), headers=V1)
        assert huge.status_code == 413 and huge.json()["error"]["message"]


def test_on_the_gateway_json_rpc_needs_a_token_and_tasks_belong_to_theirs(gateway_url: str) -> None:
    with (
        httpx.Client(base_url=gateway_url, timeout=30, headers={**V1, "authorization": f"Bearer {ALICE}"}) as alice,
        httpx.Client(base_url=gateway_url, timeout=30, headers={**V1, "authorization": f"Bearer {BOB}"}) as bob,
    ):
        anonymous = httpx.post(gateway_url + "/", json=rpc("SendMessage", send_params("hi")), headers=V1, timeout=30)
        assert anonymous.status_code == 401
        task = alice.post("/", json=rpc("SendMessage", send_params("hi"))).json()["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert error_of(bob.post("/", json=rpc("GetTask", {"id": task["id"]})))["code"] == -32001
        assert error_of(bob.post("/", json=rpc("CancelTask", {"id": task["id"]})))["code"] == -32001
        assert error_of(bob.post("/", json=rpc("SubscribeToTask", {"id": task["id"]})))["code"] == -32001
        reply = send_params("more", taskId=task["id"])
        assert error_of(bob.post("/", json=rpc("SendMessage", reply)))["code"] == -32001
        assert task["id"] not in [t["id"] for t in bob.post("/", json=rpc("ListTasks", {})).json()["result"]["tasks"]]
        assert task["id"] in [t["id"] for t in alice.post("/", json=rpc("ListTasks", {})).json()["result"]["tasks"]]


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        "text",
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}},
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "data": 1}]}},
        {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "not base64!"}]}},
        {"message": {"messageId": "m", "role": "ROLE_X", "parts": [{"text": "a"}]}},
        {"message": {"messageId": "", "role": "ROLE_USER", "parts": [{"text": "a"}]}},
        {
            "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}]},
            "configuration": {"historyLength": -1},
        },
    ],
)
def test_malformed_params_never_reach_a_5xx(agent_url: str, params: Any) -> None:
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        for method in ("SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask"):
            response = http.post("/", json=rpc(method, params), headers=V1)
            assert response.status_code < 500, (method, response.text)
            if (method == "ListTasks" and params is None) or (method == "ListTasks" and isinstance(params, dict)):
                continue  # its params are all optional, and unknown fields are ignored
            assert error_of(response)["code"] in (-32600, -32602), (method, response.text)


def test_the_card_is_cached_and_revalidated_by_its_etag(agent_url: str) -> None:
    with httpx.Client(base_url=agent_url, timeout=30) as http:
        card = http.get("/.well-known/agent-card.json")
        assert card.status_code == 200 and "max-age=" in card.headers["cache-control"]
        assert http.get("/.well-known/agent.json").json() == card.json(), "the older path serves the same card"
        again = http.get("/.well-known/agent-card.json", headers={"if-none-match": card.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
