"""The caller's ``messageId`` reaches the member the gateway hands the caller's words to.

A client sends the gateway's A2A face a message with its own ``messageId``; the swarm's
remote member (a Switchboard agent over NDJSON, an a2a-sdk agent over JSON-RPC 1.0 and
0.3) gets a task whose message carries that same id, so an agent that routes on the
message id (as the TCK's scenario agents do) works behind the gateway.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway.service import create_gateway_app
from tests.support.gateway_service import agent_server, remote_first_service
from tests.support.sdk_agents import serve_sdk_agent
from tests.support.servers import serve_app

V1 = {"A2A-Version": "1.0"}


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def send(message_id: str, text: str) -> dict[str, Any]:
    return rpc("SendMessage", {"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})


def test_a_switchboard_member_gets_the_callers_message_id() -> None:
    with agent_server() as member, serve_app(create_gateway_app(remote_first_service(member, name="scripted"))) as url:
        with httpx.Client(base_url=url, timeout=30) as gateway:
            answer = gateway.post("/", json=send("caller-msg-ndjson", "echo hello"), headers=V1).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
        with httpx.Client(base_url=member, timeout=30) as agent:
            tasks = agent.post("/", json=rpc("ListTasks", {"historyLength": 10}), headers=V1).json()["result"]["tasks"]
    [task] = tasks
    assert task["history"][0]["messageId"] == "caller-msg-ndjson"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
def test_an_sdk_member_gets_the_callers_message_id_over_json_rpc(version: str) -> None:
    with serve_sdk_agent(v03=version == "0.3") as (member, executor):
        service = remote_first_service(member, name="sdk_helper")
        with serve_app(create_gateway_app(service)) as url, httpx.Client(base_url=url, timeout=30) as gateway:
            answer = gateway.post("/", json=send(f"caller-msg-{version}", "hello"), headers=V1).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    assert executor.message_ids == [f"caller-msg-{version}"]
