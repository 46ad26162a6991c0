"""The HTTP+JSON (REST) binding: the real a2a-sdk 1.3 client configured for HTTP+JSON against an agent server.

The SDK reads the card, finds the HTTP+JSON interface under ``/a2a/rest`` and speaks REST to
it: every answer and stream event is parsed into its protobuf types, every error into its
own exception class from the ``google.rpc.Status`` body's ErrorInfo. The agent server needs
a token; on the gateway, tasks belong to the token that started them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from agent_server import Principal, PushSettings, TokenTable, create_app
from agent_server.testing import scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.sdk_clients import events_of, message, text_of
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

TOKEN = "agent-secret"
ALICE, BOB = "alice-secret", "bob-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat")})
V1 = {"A2A-Version": "1.0"}
REST = "/a2a/rest"


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(), token=TOKEN, max_body_bytes=64 * 1024, push=PushSettings())) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    with serve_app(create_gateway_app(triage_service(), tokens=TOKENS)) as url:
        yield url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {TOKEN}"}) as client:
        yield client


async def rest_client(http: httpx.AsyncClient, base_url: str, *, streaming: bool) -> Client:
    """The SDK's client for the card at ``base_url``, allowed HTTP+JSON only (so it cannot fall back to JSON-RPC)."""
    card = await A2ACardResolver(http, base_url).get_agent_card()
    config = ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=["HTTP+JSON"])
    return ClientFactory(config).create(card)


def status_error(response: httpx.Response, status: int) -> dict[str, Any]:
    """The ``google.rpc.Status`` body of an error answer, checked for its shape."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/a2a+json")
    error = response.json()["error"]
    assert error["code"] == status and error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert error["details"][0]["domain"] == "a2a-protocol.org"
    return dict(error)


async def test_the_card_lists_http_json_under_its_own_path(agent_url: str, http: httpx.AsyncClient) -> None:
    card = await A2ACardResolver(http, agent_url).get_agent_card()
    rest = [i for i in card.supported_interfaces if i.protocol_binding == "HTTP+JSON"]
    assert [(i.url, i.protocol_version) for i in rest] == [(agent_url + REST, "1.0")]


async def test_send_answers_the_completed_task(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=False)
    [event] = await events_of(client, message("echo hello there"))
    assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(event.task) == "hello there" and event.task.context_id


async def test_stream_then_get_and_list_find_the_task(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=True)
    events = await events_of(client, message("stream 3 0.01 0.001"))
    assert events[0].HasField("task"), "a stream opens with the Task"
    chunks = [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    assert chunks == ["chunk-0 ", "chunk-1 ", "chunk-2 "]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    task_id, context_id = events[0].task.id, events[0].task.context_id

    task = await client.get_task(GetTaskRequest(id=task_id, history_length=1))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED and text_of(task) == "chunk-0 chunk-1 chunk-2 "
    listed = await client.list_tasks(ListTasksRequest(context_id=context_id, include_artifacts=True))
    assert [t.id for t in listed.tasks] == [task_id] and text_of(listed.tasks[0]) == "chunk-0 chunk-1 chunk-2 "


async def test_cancel_of_a_running_task_ends_it_canceled(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=True)
    stream = client.send_message(message("sleep 30"))
    first = await anext(stream)
    await stream.aclose()
    canceled = await client.cancel_task(CancelTaskRequest(id=first.task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert (await client.get_task(GetTaskRequest(id=first.task.id))).status.state == TaskState.TASK_STATE_CANCELED


async def test_subscribe_after_a_disconnect_follows_the_task_to_its_end(
    agent_url: str, http: httpx.AsyncClient
) -> None:
    client = await rest_client(http, agent_url, streaming=True)
    stream = client.send_message(message("stream 6 0.3 0"))
    first = await anext(stream)
    await stream.aclose()  # the connection is cut; the task goes on
    events = [e async for e in client.subscribe(SubscribeToTaskRequest(id=first.task.id))]
    assert events[0].HasField("task") and events[0].task.id == first.task.id
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    seen = text_of(events[0].task) + "".join(
        e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")
    )
    assert seen == "".join(f"chunk-{i} " for i in range(6))
    # the proto's verb for it, GET, is served too; a finished task has nothing to subscribe to
    answer = await http.get(f"{agent_url}{REST}/tasks/{first.task.id}:subscribe", headers=V1)
    assert status_error(answer, 400)["details"][0]["reason"] == "UNSUPPORTED_OPERATION"
    with pytest.raises(UnsupportedOperationError):
        [e async for e in client.subscribe(SubscribeToTaskRequest(id=first.task.id))]


async def test_an_input_required_round_trip_continues_the_same_task(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=False)
    [asked] = await events_of(client, message("ask which plan?"))
    assert asked.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    [answered] = await events_of(
        client, message("the big one", task_id=asked.task.id, context_id=asked.task.context_id)
    )
    assert answered.task.id == asked.task.id and answered.task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_errors_reach_the_sdk_as_its_own_exceptions(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=False)
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id="no-such-task"))
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task(CancelTaskRequest(id="no-such-task"))
    with pytest.raises(TaskNotFoundError):  # push is served now: a config for an unknown task is refused as such
        await client.create_task_push_notification_config(TaskPushNotificationConfig(task_id="t", url="http://x"))


async def test_not_found_and_bad_bodies_are_4xx_with_a_readable_status_body(
    agent_url: str, http: httpx.AsyncClient
) -> None:
    base = agent_url + REST
    missing = status_error(await http.get(base + "/tasks/no-such-task", headers=V1), 404)
    assert missing["status"] == "NOT_FOUND" and missing["details"][0]["reason"] == "TASK_NOT_FOUND"
    assert "no-such-task" in missing["message"]

    bad = status_error(
        await http.post(base + "/message:send", json={"message": {"role": "ROLE_USER"}}, headers=V1), 400
    )
    assert bad["details"][0]["reason"] == "INVALID_PARAMS" and "message.parts" in bad["message"]
    assert {"field": "message.parts", "description": "Field required"} in bad["details"][1]["fieldViolations"]

    not_json = await http.post(
        base + "/message:send", content=b"{oops", headers={**V1, "content-type": "application/a2a+json"}
    )
    assert "not valid JSON" in status_error(not_json, 400)["message"]
    as_text = await http.post(base + "/message:send", content=b"{}", headers={**V1, "content-type": "text/plain"})
    assert status_error(as_text, 415)["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    too_big = await http.post(
        base + "/message:send", content=b" " * (65 * 1024), headers={**V1, "content-type": "application/json"}
    )
    assert status_error(too_big, 413)["message"].startswith("request body is larger")
    bad_query = status_error(await http.get(base + "/tasks?pageSize=many", headers=V1), 400)
    assert "pageSize" in bad_query["message"]

    unversioned = status_error(await http.get(base + "/tasks"), 400)
    assert (
        unversioned["details"][0]["reason"] == "VERSION_NOT_SUPPORTED" and "A2A-Version: 1.0" in unversioned["message"]
    )
    assert (await http.get(base + "/tasks?A2A-Version=1.0")).status_code == 200

    nowhere = status_error(await http.get(base + "/nowhere", headers=V1), 404)
    assert nowhere["details"][0]["reason"] == "METHOD_NOT_FOUND" and "POST /message:send" in nowhere["message"]
    wrong_verb = await http.delete(base + "/message:send", headers=V1)
    assert status_error(wrong_verb, 405) and wrong_verb.headers["allow"] == "POST"
    card = status_error(await http.get(base + "/extendedAgentCard", headers=V1), 400)
    assert card["details"][0]["reason"] == "UNSUPPORTED_OPERATION"


async def test_without_the_token_every_operation_is_401(agent_url: str) -> None:
    async with httpx.AsyncClient(timeout=30, headers=V1) as anonymous:
        assert (await anonymous.get(agent_url + REST + "/tasks")).status_code == 401
        sent = await anonymous.post(agent_url + REST + "/message:send", json={"message": {}})
        assert sent.status_code == 401


async def test_the_ndjson_bindings_get_by_path_is_unchanged(agent_url: str, http: httpx.AsyncClient) -> None:
    client = await rest_client(http, agent_url, streaming=False)
    [event] = await events_of(client, message("echo same task"))
    ndjson = (await http.get(f"{agent_url}/tasks/{event.task.id}")).json()
    assert ndjson["id"] == event.task.id and ndjson["sessionId"] == event.task.context_id
    assert ndjson["status"]["state"] == "completed" and "contextId" not in ndjson
    standard = (await http.get(f"{agent_url}{REST}/tasks/{event.task.id}", headers=V1)).json()
    assert standard["status"]["state"] == "TASK_STATE_COMPLETED" and standard["contextId"] == event.task.context_id


async def test_on_the_gateway_rest_needs_a_token_and_tasks_belong_to_theirs(gateway_url: str) -> None:
    async with (
        httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {ALICE}"}) as alice,
        httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {BOB}"}) as bob,
        httpx.AsyncClient(timeout=30, headers=V1) as anonymous,
    ):
        assert (await anonymous.post(gateway_url + REST + "/message:send", json={"message": {}})).status_code == 401
        [event] = await events_of(await rest_client(alice, gateway_url, streaming=False), message("hello"))
        assert event.task.status.state == TaskState.TASK_STATE_COMPLETED
        bobs = await rest_client(bob, gateway_url, streaming=False)
        with pytest.raises(TaskNotFoundError):
            await bobs.get_task(GetTaskRequest(id=event.task.id))
        listed = await bobs.list_tasks(ListTasksRequest())
        assert event.task.id not in [t.id for t in listed.tasks]
