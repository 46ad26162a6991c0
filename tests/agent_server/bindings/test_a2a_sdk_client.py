"""The real a2a-sdk 1.3 client, v1.0 and v0.3, against a Switchboard agent server and against the gateway.

Everything goes through the SDK: it reads the card at ``/.well-known/agent-card.json``,
picks the JSON-RPC interface of its version (the v0.3 client is handed the card with only
the 0.3 interface left, as a v0.3 server's card would be), and parses every answer and every
stream event into its own protobuf types. The agent behind both is the scripted one.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from gateway.service import create_gateway_app
from tests.support.gateway_service import remote_first_service
from tests.support.sdk_clients import message, text_of
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

PROBE = Probe()


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(probe=PROBE))) as url:
        yield url


@pytest.fixture(scope="module")
def gateway_url(agent_url: str) -> Iterator[str]:
    """A gateway whose starting agent is the scripted one, remote: the gateway's face answers for it."""
    with serve_app(create_gateway_app(remote_first_service(agent_url, name="scripted"))) as url:
        yield url


@pytest.fixture(params=["server", "gateway"])
def base_url(request: pytest.FixtureRequest, agent_url: str, gateway_url: str) -> str:
    return agent_url if request.param == "server" else gateway_url


@pytest.fixture(params=["1.0", "0.3"])
def version(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def card(base_url: str, version: str) -> AgentCard:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == "JSONRPC" and i.protocol_version == version]
    assert keep, f"the card offers JSON-RPC {version}"
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


def client_for(card: AgentCard, http: httpx.AsyncClient, *, streaming: bool) -> Client:
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


async def test_the_card_is_found_at_agent_card_json_with_both_versions_and_the_ndjson_binding(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, base_url).get_agent_card()
        raw = (await http.get(base_url + "/.well-known/agent-card.json")).json()
    offered = {(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces}
    assert {("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("urn:switchboard:a2a-ndjson", "1.0")} <= offered
    assert card.capabilities.streaming
    assert raw["url"].startswith(base_url) and raw["preferredTransport"] == "JSONRPC" and raw["protocolVersion"]


async def test_send_answers_the_completed_task(card: AgentCard) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        events = await events_of(client_for(card, http, streaming=False), message("echo hello there"))
    assert len(events) == 1 and events[0].HasField("task")
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(task) == "hello there" and task.context_id


async def test_stream_is_the_task_then_updates_parsed_by_the_sdk_and_get_and_list_find_it(
    card: AgentCard, version: str
) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = client_for(card, http, streaming=True)
        events = await events_of(client, message("stream 3 0.01 0.001"))
        assert events[0].HasField("task"), "a stream opens with the Task"
        kinds = [event.WhichOneof("payload") for event in events[1:]]
        assert kinds.count("artifact_update") == 3 and kinds[-1] == "status_update"
        chunks = [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
        assert chunks == ["chunk-0 ", "chunk-1 ", "chunk-2 "]
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        task_id = events[0].task.id

        task = await client.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED and text_of(task) == "chunk-0 chunk-1 chunk-2 "
        if version == "1.0":  # ListTasks is new in 1.0
            listed = await client.list_tasks(ListTasksRequest(context_id=events[0].task.context_id))
            assert [t.id for t in listed.tasks] == [task_id]


async def test_cancel_of_a_running_task_ends_it_canceled(card: AgentCard) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = client_for(card, http, streaming=True)
        stream = client.send_message(message("sleep 30"))
        first = await anext(stream)
        await stream.aclose()
        task_id = first.task.id
        canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        assert (await client.get_task(GetTaskRequest(id=task_id))).status.state == TaskState.TASK_STATE_CANCELED


async def test_subscribe_after_a_disconnect_opens_with_the_task_and_follows_it_to_the_end(card: AgentCard) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = client_for(card, http, streaming=True)
        stream = client.send_message(message("stream 6 0.5 0"))  # 3 s: ample time to subscribe before it ends
        first = await anext(stream)
        await stream.aclose()  # the connection is cut; the task goes on
        events = [e async for e in client.subscribe(SubscribeToTaskRequest(id=first.task.id))]
    assert events[0].HasField("task") and events[0].task.id == first.task.id, "the current Task comes first"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    seen = text_of(events[0].task) + "".join(
        e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")
    )
    assert seen == "".join(f"chunk-{i} " for i in range(6)), "the Task and the updates after it hold every chunk once"


async def test_an_input_required_round_trip_continues_the_same_task(card: AgentCard) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        client = client_for(card, http, streaming=False)
        first = (await events_of(client, message("ask which plan?")))[-1].task
        assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert first.status.message.parts[0].text == "which plan?"
        reply = message("the big one", task_id=first.id, context_id=first.context_id)
        second = (await events_of(client, reply))[-1].task
    assert second.id == first.id and second.status.state == TaskState.TASK_STATE_COMPLETED
    assert "got: the big one" in text_of(second)
