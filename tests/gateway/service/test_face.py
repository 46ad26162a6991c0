"""The gateway's own A2A face as its configuration makes it: push notifications, the extended card, gRPC.

The gateway is built from a TOML file (memory stores, the default offline agent) with a
chat token in ``[[security.tokens]]``, push on with webhooks allowed on 127.0.0.1 (refused
by default), an extended card, and ``grpc_port = 0``. The real a2a-sdk 1.3 clients talk to
it: the gRPC client refused without a token and answered with the chat token; the extended
card on JSON-RPC, HTTP+JSON and gRPC to a caller with a token only; a webhook sent with a
message hears the task's updates with its token, a private host is refused. A gateway
made without push says so in its card and refuses the config operations.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    GetExtendedAgentCardRequest,
    TaskPushNotificationConfig,
    TaskState,
    a2a_pb2_grpc,
)
from a2a.utils.errors import InvalidParamsError

from agent_server.push.settings import PushSettings
from gateway.config.load import load_config
from gateway.service import create_gateway_app
from tests.support.gateway_service import triage_service
from tests.support.sdk_clients import final_task as send, message_for, text_of
from tests.support.servers import serve_app
from tests.support.waiting import until
from tests.support.webhooks import Webhooks, serve_webhooks

pytestmark = pytest.mark.anyio

TOKEN_ENV, TOKEN = "FACE_TEST_ALICE_TOKEN", "alice-face-secret"
AUTH = {"authorization": f"Bearer {TOKEN}"}
GRPC_AUTH = ClientCallContext(service_parameters=AUTH)
CONFIG = """
[gateway]
name = "support"
data_dir = "{data_dir}"
grpc_port = 0

[gateway.push]
enabled = true
allowed_hosts = ["127.0.0.1"]

[gateway.push.retry]
first_backoff_secs = 0.01

[gateway.extended_card]
description = "The support swarm, as its own callers know it."
skills = [{{ id = "backstage", name = "Backstage", description = "only for callers with a token" }}]

[stores]
sessions = "memory"
events = "memory"
blackboard = "memory"

[[security.tokens]]
name = "alice"
scope = "chat"
token_env = "{token_env}"
"""


@pytest.fixture(scope="module")
def gateway_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("face")
    path = folder / "gateway.toml"
    path.write_text(CONFIG.format(data_dir=folder / "data", token_env=TOKEN_ENV), encoding="utf-8")
    os.environ[TOKEN_ENV] = TOKEN  # read once, when the app is made
    try:
        app = create_gateway_app(load_config(path, environ={}), origin=str(path))
    finally:
        del os.environ[TOKEN_ENV]
    with serve_app(app) as url:
        yield url


@pytest.fixture(scope="module")
def webhooks() -> Iterator[Webhooks]:
    with serve_webhooks() as hooks:
        yield hooks


async def card_for(url: str, binding: str) -> AgentCard:
    """The gateway's card with only its ``binding`` interface of A2A 1.0 left, so the SDK speaks that one."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == binding and i.protocol_version == "1.0"]
    assert len(keep) == 1, card.supported_interfaces
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


@pytest.fixture
async def grpc_client(gateway_url: str) -> AsyncIterator[Client]:
    config = ClientConfig(streaming=False, supported_protocol_bindings=["GRPC"])
    config.grpc_channel_factory = grpc.aio.insecure_channel
    client = ClientFactory(config).create(await card_for(gateway_url, "GRPC"))
    yield client
    await client.close()


async def test_the_card_offers_push_the_extended_card_and_grpc_and_says_calls_need_a_token(gateway_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(gateway_url + "/.well-known/agent-card.json", headers={"a2a-version": "1.0"})).json()
    assert card["capabilities"]["pushNotifications"] is True and card["capabilities"]["extendedAgentCard"] is True
    grpc_urls = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert len(grpc_urls) == 1 and grpc_urls[0].startswith("127.0.0.1:")
    assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
    assert "backstage" not in {skill["id"] for skill in card["skills"]}


async def test_over_grpc_a_call_without_a_token_is_refused_and_a_chat_token_gets_an_answer(
    gateway_url: str, grpc_client: Client
) -> None:
    card = await card_for(gateway_url, "GRPC")
    async with grpc.aio.insecure_channel(card.supported_interfaces[0].url) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(message_for("hello"), metadata=(("a2a-version", "1.0"),))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(
                message_for("hello"), metadata=(("a2a-version", "1.0"), ("authorization", "Bearer no"))
            )
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    task = await send(grpc_client, message_for("hello there"), GRPC_AUTH)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED and text_of(task).strip()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_extended_card_over_http_goes_to_a_caller_with_a_token_only(gateway_url: str, binding: str) -> None:
    card = await card_for(gateway_url, binding)
    async with httpx.AsyncClient(timeout=30) as http:
        with pytest.raises(A2AClientError, match="401"):
            await (
                ClientFactory(ClientConfig(httpx_client=http, supported_protocol_bindings=[binding]))
                .create(card)
                .get_extended_agent_card(GetExtendedAgentCardRequest())
            )
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        extended = (
            await ClientFactory(ClientConfig(httpx_client=http, supported_protocol_bindings=[binding]))
            .create(card)
            .get_extended_agent_card(GetExtendedAgentCardRequest())
        )
    assert extended.description == "The support swarm, as its own callers know it."
    assert {"backstage", "assistant"} <= {skill.id for skill in extended.skills}


async def test_the_extended_card_over_grpc_goes_to_a_caller_with_a_token_only(grpc_client: Client) -> None:
    with pytest.raises(A2AClientError, match="UNAUTHENTICATED"):
        await grpc_client.get_extended_agent_card(GetExtendedAgentCardRequest())
    extended = await grpc_client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=GRPC_AUTH)
    assert "backstage" in {skill.id for skill in extended.skills}


async def test_a_webhook_sent_with_a_message_hears_the_swarm_task_and_a_private_host_is_refused(
    gateway_url: str, webhooks: Webhooks
) -> None:
    card = await card_for(gateway_url, "JSONRPC")
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as http:
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        webhook = TaskPushNotificationConfig(url=webhooks.hook("swarm"), token="tok-swarm")
        task = await send(client, message_for("hello", webhook=webhook), None)
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        await until(
            lambda: any(
                "statusUpdate" in d.body and d.body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
                for d in webhooks.received("swarm")
            ),
            "the completed status at the webhook",
        )
        deliveries = webhooks.received("swarm")
        assert all(d.headers["x-a2a-notification-token"] == "tok-swarm" for d in deliveries)
        assert all(
            (d.body.get("statusUpdate") or d.body.get("artifactUpdate") or {}).get("taskId") == task.id
            for d in deliveries
        )
        with pytest.raises(InvalidParamsError, match="not public"):
            await send(
                client, message_for("hello", webhook=TaskPushNotificationConfig(url="http://10.0.0.1/hook")), None
            )


async def test_a_gateway_without_push_says_so_and_refuses_the_config_operations() -> None:
    with serve_app(create_gateway_app(triage_service())) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30, headers={"a2a-version": "1.0"}) as http:
            card = (await http.get("/.well-known/agent-card.json")).json()
            assert card["capabilities"]["pushNotifications"] is False
            assert all(i["protocolBinding"] != "GRPC" for i in card["supportedInterfaces"])
            body = {"jsonrpc": "2.0", "id": 1, "method": "ListTaskPushNotificationConfigs", "params": {"taskId": "t"}}
            assert (await http.post("/", json=body)).json()["error"]["code"] == -32003


def test_face_settings_come_from_the_configuration_not_from_arguments() -> None:
    with pytest.raises(TypeError, match="push, grpc_port cannot be given with a configuration"):
        create_gateway_app(load_config(None, environ={}), push=PushSettings(), grpc_port=0)
