"""An agent that answers with a ``Message`` and nothing else is answered on the standard bindings with that Message.

A hosted agent returns a ``protocol.Message`` and produces nothing else (no artifact, no
question, no handoff): ``SendMessage`` on a new task answers ``{"message": ...}`` (v0.3 the
Message itself, ``kind: message``), as A2A lets an agent answer without a task. The task is
kept all the same: the NDJSON binding answers it as a Task, a stream opens with the Task
before the agent has answered and stays a task stream, and a message that continues a task
is answered with the task.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.types import Message as SdkMessage, Part, Role, SendMessageRequest

from agent_server import HostedAgent, InputRequired, TaskContext, create_app
from protocol import Message
from tests.support.a2a_clients import V1, rpc, sdk_client, sse_results
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


async def _greeter(ctx: TaskContext) -> Any:
    """``ask``: a question (a task to continue); anything else: a bare Message."""
    if ctx.text == "ask":
        return InputRequired("who?")
    return Message.agent(f"hello {ctx.text}")


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_app(create_app(HostedAgent("greeter", _greeter, description="Greets."))) as url:
        yield url


def v1_send(text: str, **more: Any) -> dict[str, Any]:
    return {"message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **more}}


def test_v1_and_v03_send_answer_the_bare_message(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        answer = http.post("/", json=rpc("SendMessage", v1_send("ada", contextId="c1")), headers=V1).json()["result"]
        assert set(answer) == {"message"}
        message = answer["message"]
        assert message["role"] == "ROLE_AGENT" and message["parts"] == [{"text": "hello ada"}]
        assert message["contextId"] == "c1" and "taskId" not in message and message["messageId"]
        trimmed = {**v1_send("bob"), "configuration": {"historyLength": 0}}
        assert "message" in http.post("/", json=rpc("SendMessage", trimmed), headers=V1).json()["result"]
        legacy_message = {
            "kind": "message",
            "messageId": "m2",
            "role": "user",
            "parts": [{"kind": "text", "text": "cy"}],
        }
        legacy = http.post("/", json=rpc("message/send", {"message": legacy_message})).json()["result"]
        assert legacy["kind"] == "message" and legacy["role"] == "agent"
        assert legacy["parts"] == [{"kind": "text", "text": "hello cy"}]


def test_the_task_is_kept_and_other_bindings_and_continuations_answer_with_it(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        ndjson = http.post(
            "/tasks/send", json={"message": {"role": "user", "parts": [{"type": "text", "text": "dan"}]}}
        )
        task = ndjson.json()
        assert task["status"]["state"] == "completed" and task["status"]["message"]["parts"][0]["text"] == "hello dan"
        stream = http.post("/", json=rpc("SendStreamingMessage", v1_send("eve")), headers=V1)
        events = sse_results(stream)
        assert "task" in events[0], "a stream opens with the Task, before the agent has answered"
        assert events[-1]["statusUpdate"]["status"]["message"]["parts"] == [{"text": "hello eve"}]
        asked = http.post("/", json=rpc("SendMessage", v1_send("ask")), headers=V1).json()["result"]["task"]
        reply = v1_send("fay", taskId=asked["id"], contextId=asked["contextId"])
        continued = http.post("/", json=rpc("SendMessage", reply), headers=V1).json()["result"]
        assert continued["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_the_a2a_sdk_client_reads_the_bare_message(base_url: str, version: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = await sdk_client(http, base_url, version, streaming=False)
        request = SendMessageRequest(
            message=SdkMessage(role=Role.ROLE_USER, message_id="m-sdk", parts=[Part(text="gil")])
        )
        events = [event async for event in client.send_message(request)]
    assert len(events) == 1 and events[0].HasField("message")
    assert events[0].message.role == Role.ROLE_AGENT and events[0].message.parts[0].text == "hello gil"
