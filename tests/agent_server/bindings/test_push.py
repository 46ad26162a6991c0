"""Push notifications and the extended card on the JSON-RPC and gRPC bindings, through the real a2a-sdk 1.3 client.

The agent server (the scripted agent) has a token, allows webhooks on 127.0.0.1 (loopback,
refused by default) and an extended card; the webhooks are served by the test
(tests/support/webhooks.py). What is checked: the four config operations in both versions,
delivery with the config's token and authentication, in order, a retry after a failed
delivery that still delivers each update once, a private host refused before anything is
kept or sent, and the extended card for a caller with the token only. Over gRPC (the same
server's gRPC port, the SDK's gRPC client): the config operations, a webhook sent with a
message, a private host refused as InvalidParamsError, and the extended card; the v1.0 card
that offers both still parses as v1.0's AgentCard with no unknown field.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
    a2a_pb2,
)
from a2a.utils.errors import A2AError, InvalidParamsError, TaskNotFoundError
from google.protobuf.json_format import ParseDict

from agent_server import create_app
from agent_server.extended_card import ExtendedCard
from agent_server.push.settings import PushSettings, RetryPolicy
from agent_server.testing import scripted_agent
from tests.support.sdk_clients import final_task as send, message_for as message
from tests.support.servers import serve_app
from tests.support.waiting import until
from tests.support.webhooks import Webhooks, serve_webhooks

pytestmark = pytest.mark.anyio

TOKEN = "operator-secret"
AUTH = {"authorization": f"Bearer {TOKEN}"}
V1 = {"A2A-Version": "1.0", **AUTH}
GRPC_AUTH = ClientCallContext(service_parameters=AUTH)
LOOPBACK_PUSH = PushSettings(allowed_hosts=("127.0.0.1",), retry=RetryPolicy(first_backoff_s=0.01))
EXTENDED = ExtendedCard.of(
    description="The scripted agent, as its operator's callers know it.",
    skills=[{"id": "backstage", "name": "backstage", "description": "only for callers with a token", "tags": ["ops"]}],
)


@pytest.fixture(scope="module")
def webhooks() -> Iterator[Webhooks]:
    with serve_webhooks(failing_first=frozenset({"flaky"})) as hooks:
        yield hooks


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    app = create_app(scripted_agent(), token=TOKEN, push=LOOPBACK_PUSH, extended_card=EXTENDED, grpc_port=0)
    with serve_app(app) as url:
        yield url


@pytest.fixture(params=["1.0", "0.3"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def card_for(url: str, version: str, binding: str = "JSONRPC") -> AgentCard:
    """The server's card with only the ``binding`` interface of ``version`` left, so the SDK speaks that one."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == binding and i.protocol_version == version]
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


@pytest.fixture
async def grpc_card(agent_url: str) -> AgentCard:
    return await card_for(agent_url, "1.0", "GRPC")


@pytest.fixture
async def grpc_client(grpc_card: AgentCard) -> AsyncIterator[Client]:
    config = ClientConfig(
        streaming=False, supported_protocol_bindings=["GRPC"], grpc_channel_factory=grpc.aio.insecure_channel
    )
    client = ClientFactory(config).create(grpc_card)
    try:
        yield client
    finally:
        await client.close()


def client_for(card: AgentCard, http: httpx.AsyncClient) -> Client:
    return ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)


def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def kinds(bodies: list[dict[str, Any]]) -> list[str]:
    """Each delivered StreamResponse as its kind and, for a status, its state."""
    return [
        f"status:{body['statusUpdate']['status']['state']}" if "statusUpdate" in body else next(iter(body))
        for body in bodies
    ]


async def test_configs_are_created_got_listed_and_deleted_by_the_sdk_in_both_versions(
    agent_url: str, webhooks: Webhooks, version: str
) -> None:
    card = await card_for(agent_url, version)
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        await round_trip_configs(client_for(card, http), webhooks.hook("crud"))


async def round_trip_configs(client: Client, hook: str, context: ClientCallContext | None = None) -> None:
    """A config created on an input-required task, got, listed, deleted twice, and gone."""
    task = await send(client, message("ask which one?"), context)
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    wanted = TaskPushNotificationConfig(
        task_id=task.id,
        id="first",
        url=hook,
        token="per-task-token",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="hook-secret"),
    )
    created = await client.create_task_push_notification_config(wanted, context=context)
    assert (created.id, created.task_id, created.url, created.token) == ("first", task.id, wanted.url, wanted.token)
    assert created.authentication.scheme == "Bearer" and created.authentication.credentials == "hook-secret"

    target = GetTaskPushNotificationConfigRequest(task_id=task.id, id="first")
    got = await client.get_task_push_notification_config(target, context=context)
    assert got.url == wanted.url and got.token == "per-task-token"
    every = ListTaskPushNotificationConfigsRequest(task_id=task.id)
    listed = await client.list_task_push_notification_configs(every, context=context)
    assert [config.id for config in listed.configs] == ["first"]

    delete = DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="first")
    await client.delete_task_push_notification_config(delete, context=context)
    await client.delete_task_push_notification_config(delete, context=context)
    listed = await client.list_task_push_notification_configs(every, context=context)
    assert list(listed.configs) == []
    with pytest.raises(A2AError):
        await client.get_task_push_notification_config(target, context=context)


async def test_each_update_of_the_task_reaches_its_webhook_in_order_with_the_token_and_the_credentials(
    agent_url: str, webhooks: Webhooks
) -> None:
    card = await card_for(agent_url, "1.0")
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        client = client_for(card, http)
        task = await send(client, message("ask which plan?"))
        config = TaskPushNotificationConfig(
            task_id=task.id,
            url=webhooks.hook("ordered"),
            token="tok-ordered",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="hook-secret"),
        )
        await client.create_task_push_notification_config(config)
        done = await send(client, message("the big one", task=task))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    await until(lambda: len(webhooks.received("ordered")) >= 3, "the reply's three updates at the webhook")
    deliveries = webhooks.received("ordered")
    assert kinds([d.body for d in deliveries]) == [
        "status:TASK_STATE_WORKING",
        "artifactUpdate",
        "status:TASK_STATE_COMPLETED",
    ]
    assert deliveries[1].body["artifactUpdate"]["artifact"]["parts"] == [{"text": "got: the big one"}]
    for delivery in deliveries:
        assert delivery.headers["x-a2a-notification-token"] == "tok-ordered"
        assert delivery.headers["authorization"] == "Bearer hook-secret"
        assert delivery.headers["content-type"] == "application/a2a+json"
        update = delivery.body.get("statusUpdate") or delivery.body["artifactUpdate"]
        assert update["taskId"] == task.id and update["contextId"] == task.context_id


async def test_a_failed_delivery_is_retried_and_every_update_arrives_once_in_order(
    agent_url: str, webhooks: Webhooks
) -> None:
    """The config comes with the send; the hook answers 500 to its first request, then 200."""
    card = await card_for(agent_url, "1.0")
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        webhook = TaskPushNotificationConfig(url=webhooks.hook("flaky"), token="tok-flaky")
        task = await send(client_for(card, http), message("stream 3 0", webhook=webhook))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    await until(lambda: len(webhooks.received("flaky")) >= 5, "the five updates at the webhook")
    bodies = [delivery.body for delivery in webhooks.received("flaky")]
    assert webhooks.refused("flaky") == 1
    assert kinds(bodies) == ["status:TASK_STATE_WORKING", *["artifactUpdate"] * 3, "status:TASK_STATE_COMPLETED"]
    chunks = [body["artifactUpdate"]["artifact"]["parts"][0]["text"] for body in bodies[1:4]]
    assert chunks == ["chunk-0 ", "chunk-1 ", "chunk-2 "]


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.1/hook", "http://169.254.169.254/latest/meta-data", "http://[::1]:9/", "http://192.168.1.10/hook"],
)
async def test_a_webhook_on_a_private_host_is_refused_and_nothing_is_kept(
    agent_url: str, webhooks: Webhooks, url: str
) -> None:
    async with httpx.AsyncClient(base_url=agent_url, timeout=30, headers=V1) as http:
        task = (await http.post("/", json=rpc("SendMessage", {"message": _raw("ask where?")}))).json()["result"]["task"]
        created = (
            await http.post("/", json=rpc("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url}))
        ).json()
        assert created["error"]["code"] == -32602 and "not public" in created["error"]["message"]
        listed = (await http.post("/", json=rpc("ListTaskPushNotificationConfigs", {"taskId": task["id"]}))).json()
        assert listed["result"]["configs"] == []
        inline = {"message": _raw("echo hi"), "configuration": {"taskPushNotificationConfig": {"url": url}}}
        refused = (await http.post("/", json=rpc("SendMessage", inline))).json()
        assert refused["error"]["code"] == -32602 and "not public" in refused["error"]["message"]
        tasks = (await http.post("/", json=rpc("ListTasks", {}))).json()["result"]["tasks"]
        assert all(t["history"][0]["parts"] != [{"text": "echo hi"}] for t in tasks if t.get("history")), (
            "no task started"
        )


async def test_the_extended_card_goes_to_a_caller_with_the_token_only(agent_url: str, version: str) -> None:
    card = await card_for(agent_url, version)
    assert card.capabilities.extended_agent_card and card.capabilities.push_notifications
    assert "backstage" not in {skill.id for skill in card.skills}
    async with httpx.AsyncClient(timeout=30) as http:
        raw = (await http.get(agent_url + "/.well-known/agent-card.json")).json()
        assert raw["supportsAuthenticatedExtendedCard"] is True, "what a v0.3 client reads"
        with pytest.raises(A2AClientError, match="401"):
            await client_for(card, http).get_extended_agent_card(GetExtendedAgentCardRequest())
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        extended = await client_for(card, http).get_extended_agent_card(GetExtendedAgentCardRequest())
    assert "backstage" in {skill.id for skill in extended.skills} and "scripted" in {s.id for s in extended.skills}
    assert extended.description == "The scripted agent, as its operator's callers know it."


async def test_a_server_without_an_extended_card_or_push_says_so_with_the_spec_codes() -> None:
    with serve_app(create_app(scripted_agent(), push=None)) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30, headers={"A2A-Version": "1.0"}) as http:
            card = (await http.get("/.well-known/agent-card.json")).json()
            assert (
                card["capabilities"]["pushNotifications"] is False and "extendedAgentCard" not in card["capabilities"]
            )
            error = (await http.post("/", json=rpc("GetExtendedAgentCard", {}))).json()["error"]
            assert error["code"] == -32004 and error["data"][0]["reason"] == "UNSUPPORTED_OPERATION"
            error = (await http.post("/", json=rpc("ListTaskPushNotificationConfigs", {"taskId": "t"}))).json()["error"]
            assert error["code"] == -32003


async def test_configs_are_created_got_listed_and_deleted_over_grpc(grpc_client: Client, webhooks: Webhooks) -> None:
    await round_trip_configs(grpc_client, webhooks.hook("grpc-crud"), GRPC_AUTH)
    with pytest.raises(TaskNotFoundError):
        await grpc_client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id="no-such-task"), context=GRPC_AUTH
        )


async def test_a_webhook_sent_with_a_message_over_grpc_hears_each_update_of_the_task(
    grpc_client: Client, webhooks: Webhooks
) -> None:
    webhook = TaskPushNotificationConfig(url=webhooks.hook("grpc-inline"), token="tok-inline")
    task = await send(grpc_client, message("stream 2 0", webhook=webhook), GRPC_AUTH)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    await until(lambda: len(webhooks.received("grpc-inline")) >= 4, "the four updates at the webhook")
    deliveries = webhooks.received("grpc-inline")
    assert "statusUpdate" in deliveries[0].body and "statusUpdate" in deliveries[-1].body
    assert deliveries[-1].body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all(d.headers["x-a2a-notification-token"] == "tok-inline" for d in deliveries)


async def test_a_webhook_on_a_private_host_is_refused_over_grpc_as_invalid_params(grpc_client: Client) -> None:
    task = await send(grpc_client, message("ask where?"), GRPC_AUTH)
    private = TaskPushNotificationConfig(task_id=task.id, url="http://169.254.169.254/latest/meta-data")
    with pytest.raises(InvalidParamsError, match="not public"):
        await grpc_client.create_task_push_notification_config(private, context=GRPC_AUTH)
    listed = await grpc_client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id), context=GRPC_AUTH
    )
    assert list(listed.configs) == []
    private = TaskPushNotificationConfig(url="http://10.0.0.1/hook")
    with pytest.raises(InvalidParamsError, match="not public"):
        await send(grpc_client, message("echo hi", webhook=private), GRPC_AUTH)


async def test_the_extended_card_over_grpc_goes_to_a_caller_with_the_token_only(
    grpc_card: AgentCard, grpc_client: Client
) -> None:
    assert grpc_card.capabilities.extended_agent_card and grpc_card.capabilities.push_notifications
    with pytest.raises(A2AClientError, match="UNAUTHENTICATED"):
        await grpc_client.get_extended_agent_card(GetExtendedAgentCardRequest())
    extended = await grpc_client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=GRPC_AUTH)
    assert "backstage" in {skill.id for skill in extended.skills} and "scripted" in {s.id for s in extended.skills}
    assert extended.description == "The scripted agent, as its operator's callers know it."
    grpc_interfaces = [i.url for i in extended.supported_interfaces if i.protocol_binding == "GRPC"]
    assert grpc_interfaces == [grpc_card.supported_interfaces[0].url]


def test_the_v1_card_offering_push_and_the_extended_card_is_still_a_v1_card(agent_url: str) -> None:
    card = httpx.get(agent_url + "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}).json()
    ParseDict(card, a2a_pb2.AgentCard(), ignore_unknown_fields=False)  # raises on any field v1.0 does not have
    assert card["capabilities"]["pushNotifications"] is True and card["capabilities"]["extendedAgentCard"] is True
    assert "supportsAuthenticatedExtendedCard" not in card
    both = httpx.get(agent_url + "/.well-known/agent-card.json").json()
    assert both["supportsAuthenticatedExtendedCard"] is True, "what a v0.3 reader looks for"


def test_an_extended_card_without_a_token_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="token"):
        create_app(scripted_agent(), extended_card=EXTENDED)


def _raw(text: str) -> dict[str, Any]:
    return {"messageId": "m-" + text, "role": "ROLE_USER", "parts": [{"text": text}]}


def rest_client(card: AgentCard, http: httpx.AsyncClient) -> Client:
    config = ClientConfig(streaming=False, httpx_client=http, supported_protocol_bindings=["HTTP+JSON"])
    return ClientFactory(config).create(card)


async def test_configs_and_the_extended_card_over_http_json(agent_url: str, webhooks: Webhooks) -> None:
    card = await card_for(agent_url, "1.0", "HTTP+JSON")
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        await round_trip_configs(rest_client(card, http), webhooks.hook("rest-crud"))
        extended = await rest_client(card, http).get_extended_agent_card(GetExtendedAgentCardRequest())
    assert "backstage" in {skill.id for skill in extended.skills}
    async with httpx.AsyncClient(timeout=30) as http:
        with pytest.raises(A2AClientError, match="401"):
            await rest_client(card, http).get_extended_agent_card(GetExtendedAgentCardRequest())
