"""A registered agent through the gateway at ``/proxy/{name}``: the real a2a-sdk 1.3 client on each binding.

The upstream is the a2a-sdk's own server (tests/support/sdk_agents.py), registered in a gateway
with tokens; the client reads the proxied card, which points at the gateway, and speaks
JSON-RPC 1.0, 0.3 or HTTP+JSON to it. What the gateway adds is checked through what it shows:
the caller's token and ownership, the run with the engine's events, the agent's budget, and a
cancel that reaches the agent's executor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message as SdkMessage,
    Part as SdkPart,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from agent_server import HostedAgent, Principal, TaskContext, TokenTable, create_app
from gateway.service import RemoteSpec, create_gateway_app
from protocol import Message
from tests.support.a2a_clients import HTTP_JSON, sdk_client
from tests.support.gateway_service import triage_service
from tests.support.sdk_agents import SdkAgent, serve_sdk_agent, serve_sdk_grpc_agent
from tests.support.sdk_clients import events_of, message, streamed_text, text_of
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

ALICE, BOB = "alice-secret", "bob-secret"
TOKENS = TokenTable({ALICE: Principal("alice", "chat"), BOB: Principal("bob", "chat")})
BUDGET_USD = 0.05
INTERFACES = ["1.0", "0.3", HTTP_JSON]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, SdkAgent]]:
    with serve_sdk_agent() as served:
        yield served


@pytest.fixture(scope="module")
def gateway_url(upstream: tuple[str, SdkAgent]) -> Iterator[str]:
    service = triage_service(remotes=(RemoteSpec(upstream[0], "helper", max_cost_usd=BUDGET_USD),))
    with serve_app(create_gateway_app(service, tokens=TOKENS, grpc_port=0)) as url:
        yield url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {ALICE}"}) as client:
        yield client


async def client_for(http: httpx.AsyncClient, gateway_url: str, interface: str, *, streaming: bool) -> Client:
    return await sdk_client(http, f"{gateway_url}/proxy/helper", interface, streaming=streaming)


def test_the_card_is_the_agents_own_pointing_at_the_gateway_and_public(
    gateway_url: str, upstream: tuple[str, SdkAgent]
) -> None:
    card = httpx.get(f"{gateway_url}/proxy/helper/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
    assert card.status_code == 200, card.text
    body = card.json()
    assert body["name"] == "helper"
    assert body["description"] == "An a2a-sdk agent: streams, sleeps, asks, echoes."
    assert [skill["id"] for skill in body["skills"]] == ["echo"]
    urls = {i["url"] for i in body["supportedInterfaces"] if i["protocolBinding"] != "GRPC"}
    assert urls == {f"{gateway_url}/proxy/helper", f"{gateway_url}/proxy/helper/a2a/rest"}
    [grpc_interface] = [i for i in body["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert grpc_interface["tenant"] == "helper", "the gateway's gRPC port, where the agent is the tenant of its name"
    assert not any(upstream[0] in url for url in urls), "the agent's own address stays behind the gateway"
    assert "bearer" in str(body["securitySchemes"]).lower()


async def test_the_agents_listing_says_where_it_is_proxied_and_its_budget(
    http: httpx.AsyncClient, gateway_url: str
) -> None:
    info = (await http.get(f"{gateway_url}/agents/helper")).json()
    assert info["proxy"] == "/proxy/helper"
    assert info["max_cost_usd"] == BUDGET_USD


def test_a_name_that_is_not_a_registered_remote_agent_is_404_naming_those_that_are(gateway_url: str) -> None:
    for name in ("nope", "triage"):  # triage is the gateway's local agent: nothing to proxy
        answer = httpx.get(f"{gateway_url}/proxy/{name}/.well-known/agent-card.json")
        assert answer.status_code == 404
        assert "proxied: helper" in answer.json()["error"]["message"]


def test_every_call_needs_a_token_of_the_gateways(gateway_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    answer = httpx.post(f"{gateway_url}/proxy/helper", json=body, headers={"A2A-Version": "1.0"})
    assert answer.status_code == 401
    wrong = httpx.post(f"{gateway_url}/proxy/helper/tasks/get", json={"id": "x"}, headers={"authorization": "Bearer x"})
    assert wrong.status_code == 401


@pytest.mark.parametrize("interface", INTERFACES)
async def test_a_send_reaches_the_agent_with_the_callers_message_id(
    http: httpx.AsyncClient, gateway_url: str, upstream: tuple[str, SdkAgent], interface: str
) -> None:
    client = await client_for(http, gateway_url, interface, streaming=False)
    request = SendMessageRequest(
        message=SdkMessage(role=Role.ROLE_USER, message_id=f"mine-{interface}", parts=[SdkPart(text="hello")])
    )
    [answer] = await events_of(client, request)
    assert answer.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(answer.task) == "echo: hello"
    assert f"mine-{interface}" in upstream[1].message_ids


@pytest.mark.parametrize("interface", INTERFACES)
async def test_a_stream_is_relayed_chunk_by_chunk(http: httpx.AsyncClient, gateway_url: str, interface: str) -> None:
    client = await client_for(http, gateway_url, interface, streaming=True)
    events = await events_of(client, message("stream 3 0 0"))
    assert streamed_text(events) == "chunk-0 chunk-1 chunk-2 "
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize("interface", INTERFACES)
async def test_an_agent_that_answers_with_a_message_alone_is_relayed_as_that_message(
    http: httpx.AsyncClient, gateway_url: str, interface: str
) -> None:
    client = await client_for(http, gateway_url, interface, streaming=False)
    [answer] = await events_of(client, message("reply"))
    assert answer.HasField("message"), answer
    assert answer.message.role == Role.ROLE_AGENT and answer.message.parts[0].text == "replied"


async def test_each_send_is_a_run_of_the_callers_with_the_engines_events(
    http: httpx.AsyncClient, gateway_url: str, upstream: tuple[str, SdkAgent]
) -> None:
    client = await client_for(http, gateway_url, "1.0", streaming=False)
    await events_of(client, message("hello run"))
    runs = (await http.get(f"{gateway_url}/runs")).json()["runs"]
    newest = runs[0]
    assert newest["agent"] == upstream[0] and newest["closed"]
    events = (await http.get(f"{gateway_url}/runs/{newest['run_id']}/events")).text
    assert '"agent_tool_invoked"' in events and '"member":"helper"' in events and '"input":"hello run"' in events
    assert '"agent_tool_completed"' in events
    bobs = (await http.get(f"{gateway_url}/runs", headers={"authorization": f"Bearer {BOB}"})).json()["runs"]
    assert newest["run_id"] not in [run["run_id"] for run in bobs]


async def test_a_task_is_its_callers_only(http: httpx.AsyncClient, gateway_url: str) -> None:
    client = await client_for(http, gateway_url, "1.0", streaming=False)
    [answer] = await events_of(client, message("hello alice"))
    async with httpx.AsyncClient(timeout=30, headers={"authorization": f"Bearer {BOB}"}) as bob_http:
        bob = await client_for(bob_http, gateway_url, "1.0", streaming=False)
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=answer.task.id))
    mine = await client.get_task(GetTaskRequest(id=answer.task.id))
    assert text_of(mine) == "echo: hello alice"


async def test_the_agents_budget_ends_the_task_and_cancels_the_agents(
    http: httpx.AsyncClient, gateway_url: str, upstream: tuple[str, SdkAgent]
) -> None:
    client = await client_for(http, gateway_url, "1.0", streaming=True)
    before = len(upstream[1].canceled)
    events = await events_of(client, message("stream 6 0.05 0.02"))
    final = events[-1].status_update.status
    assert final.state == TaskState.TASK_STATE_FAILED
    assert "budget" in final.message.parts[0].text
    assert "chunk-0 chunk-1 " in streamed_text(events)
    await until(lambda: len(upstream[1].canceled) > before, "the agent's executor to see its task canceled")


async def test_a_cancel_of_the_gateways_task_reaches_the_agent(
    http: httpx.AsyncClient, gateway_url: str, upstream: tuple[str, SdkAgent]
) -> None:
    client = await client_for(http, gateway_url, HTTP_JSON, streaming=True)
    before = len(upstream[1].canceled)
    stream = client.send_message(message("sleep 60"))
    first = await anext(stream)
    task_id = first.task.id

    async def agent_working() -> bool:  # the agent named its task: the gateway has something to cancel
        run = (await http.get(f"{gateway_url}/runs")).json()["runs"][0]["run_id"]
        return '"state":"working"' in (await http.get(f"{gateway_url}/runs/{run}/events")).text

    await until(agent_working, "the agent's task to be working")
    canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    await stream.aclose()
    await until(lambda: len(upstream[1].canceled) > before, "the agent's executor to see its task canceled")


async def test_an_agent_that_asks_continues_on_the_callers_next_message(
    http: httpx.AsyncClient, gateway_url: str
) -> None:
    client = await client_for(http, gateway_url, "1.0", streaming=False)
    [asked] = await events_of(client, message("ask"))
    assert asked.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert asked.task.status.message.parts[0].text == "which one?"
    ids: dict[str, Any] = {"task_id": asked.task.id, "context_id": asked.task.context_id}
    [answered] = await events_of(client, message("blue", **ids))
    assert answered.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(answered.task).endswith("got blue")


async def test_the_ndjson_binding_is_proxied_too(http: httpx.AsyncClient, gateway_url: str) -> None:
    answer = await http.post(
        f"{gateway_url}/proxy/helper/tasks/send",
        json={"id": "ndjson-1", "message": {"role": "user", "parts": [{"type": "text", "text": "over ndjson"}]}},
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"]["state"] == "completed"
    assert answer.json()["artifacts"][0]["parts"][0]["text"] == "echo: over ndjson"


async def _ours(ctx: TaskContext) -> Message:
    """A Switchboard agent (the gateway speaks A2A-NDJSON to it) that answers with a Message alone."""
    return Message.agent(f"replied to {ctx.text}")


@pytest.fixture(scope="module")
def other_bindings_gateway() -> Iterator[str]:
    """A gateway with the a2a-sdk agent registered twice more, served over HTTP+JSON only and over gRPC only, and
    a Switchboard agent."""
    with (
        serve_sdk_agent(rest=True) as (rest_url, _),
        serve_sdk_grpc_agent() as (grpc_url, _),
        serve_app(create_app(HostedAgent("ours", _ours))) as ours_url,
    ):
        remotes = (RemoteSpec(rest_url, "over_rest"), RemoteSpec(grpc_url, "over_grpc"), RemoteSpec(ours_url, "ours"))
        with serve_app(create_gateway_app(triage_service(remotes=remotes), tokens=TOKENS)) as url:
            yield url


@pytest.mark.parametrize("name", ["over_rest", "over_grpc"])
@pytest.mark.parametrize("interface", ["1.0", HTTP_JSON])
async def test_an_agent_on_another_binding_is_proxied_on_every_binding(
    http: httpx.AsyncClient, other_bindings_gateway: str, name: str, interface: str
) -> None:
    client = await sdk_client(http, f"{other_bindings_gateway}/proxy/{name}", interface, streaming=True)
    events = await events_of(client, message("stream 2 0 0"))
    assert streamed_text(events) == "chunk-0 chunk-1 "
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


async def grpc_client_for(gateway_url: str, name: str) -> Client:
    """The a2a-sdk gRPC client of the proxied agent's card: it names the interface's tenant in every request."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, f"{gateway_url}/proxy/{name}").get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    config = ClientConfig(streaming=True, supported_protocol_bindings=["GRPC"])
    config.grpc_channel_factory = grpc.aio.insecure_channel
    return ClientFactory(config).create(card)


async def test_over_grpc_the_agent_is_the_tenant_of_its_name_on_the_gateways_port(gateway_url: str) -> None:
    client = await grpc_client_for(gateway_url, "helper")
    auth = ClientCallContext(service_parameters={"authorization": f"Bearer {ALICE}"})
    try:
        events = [event async for event in client.send_message(message("stream 3 0 0"), context=auth)]
        assert streamed_text(events) == "chunk-0 chunk-1 chunk-2 "
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(TaskNotFoundError, match="proxied: helper"):  # a name no agent is registered under
            await client.get_task(GetTaskRequest(id=events[0].task.id, tenant="nope"), context=auth)
    finally:
        await client.close()


@pytest.mark.parametrize("interface", INTERFACES)
async def test_a_switchboard_agents_message_alone_is_relayed_as_that_message(
    http: httpx.AsyncClient, other_bindings_gateway: str, interface: str
) -> None:
    client = await sdk_client(http, f"{other_bindings_gateway}/proxy/ours", interface, streaming=False)
    [answer] = await events_of(client, message("hi"))
    assert answer.HasField("message"), answer
    assert answer.message.parts[0].text == "replied to hi"
