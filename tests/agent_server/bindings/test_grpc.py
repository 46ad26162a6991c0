"""The real a2a-sdk 1.3 gRPC client against a Switchboard agent server's gRPC binding.

The server runs the scripted agent with a token and a gRPC port the kernel picks; the SDK
reads the card over HTTP, keeps its ``GRPC`` interface, and does everything else over gRPC
with its own generated stubs and error mapping. Its calls carry the token as
``authorization`` metadata (the SDK's service parameters), except where a test leaves it out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
    a2a_pb2_grpc,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from tests.support.sdk_clients import message, streamed_text, text_of
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

TOKEN = "grpc-test-token"
AUTH = ClientCallContext(service_parameters={"authorization": f"Bearer {TOKEN}"})
PROBE = Probe()


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with serve_app(create_app(scripted_agent(probe=PROBE), token=TOKEN, grpc_port=0)) as url:
        yield url


@pytest.fixture
async def card(agent_url: str) -> AgentCard:
    """The server's card as the SDK reads it, with only its gRPC interface left, so the SDK cannot but use it."""
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, agent_url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    assert len(keep) == 1 and keep[0].protocol_version == "1.0", "the card lists one gRPC interface, A2A 1.0"
    assert keep[0].url.startswith("127.0.0.1:")
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return card


@pytest.fixture(params=[False, True], ids=["send", "stream"])
async def client(request: pytest.FixtureRequest, card: AgentCard) -> AsyncIterator[Client]:
    config = ClientConfig(
        streaming=request.param, supported_protocol_bindings=["GRPC"], grpc_channel_factory=grpc.aio.insecure_channel
    )
    client = ClientFactory(config).create(card)
    try:
        yield client
    finally:
        await client.close()


async def events_of(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request, context=AUTH)]


async def test_send_answers_the_completed_task_and_get_and_list_find_it(client: Client) -> None:
    events = await events_of(client, message("echo hello there"))
    task = next(e.task for e in events if e.HasField("task"))
    if len(events) > 1:  # streaming: the updates that follow the Task end completed
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    got = await client.get_task(GetTaskRequest(id=task.id), context=AUTH)
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and text_of(got) == "hello there"
    listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id), context=AUTH)
    assert [t.id for t in listed.tasks] == [task.id]


async def test_a_stream_is_the_task_then_its_updates(card: AgentCard) -> None:
    config = ClientConfig(
        streaming=True, supported_protocol_bindings=["GRPC"], grpc_channel_factory=grpc.aio.insecure_channel
    )
    client = ClientFactory(config).create(card)
    try:
        events = await events_of(client, message("stream 3 0.01 0.001"))
    finally:
        await client.close()
    assert events[0].HasField("task"), "a stream opens with the Task"
    chunks = [e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update")]
    assert chunks == ["chunk-0 ", "chunk-1 ", "chunk-2 "]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


@pytest.mark.parametrize("client", [True], indirect=True, ids=["stream"])
async def test_cancel_of_a_running_task_ends_it_canceled(client: Client) -> None:
    stream = client.send_message(message("sleep 30"), context=AUTH)
    first = await anext(stream)
    await stream.aclose()
    canceled = await client.cancel_task(CancelTaskRequest(id=first.task.id), context=AUTH)
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    got = await client.get_task(GetTaskRequest(id=first.task.id), context=AUTH)
    assert got.status.state == TaskState.TASK_STATE_CANCELED


@pytest.mark.parametrize("client", [True], indirect=True, ids=["stream"])
async def test_subscribe_after_a_disconnect_follows_the_task_to_its_end(client: Client) -> None:
    stream = client.send_message(message("stream 6 0.5 0"), context=AUTH)  # 3 s: ample time to subscribe
    first = await anext(stream)
    await stream.aclose()  # the call is cut; the task goes on
    events = [e async for e in client.subscribe(SubscribeToTaskRequest(id=first.task.id), context=AUTH)]
    assert events[0].HasField("task") and events[0].task.id == first.task.id, "the current Task comes first"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    expected = "".join(f"chunk-{i} " for i in range(6))
    assert streamed_text(events) == expected, "the Task and the updates after it hold every chunk once"


async def test_an_input_required_round_trip_continues_the_same_task(client: Client) -> None:
    first = [e.task for e in await events_of(client, message("ask which plan?")) if e.HasField("task")][-1]
    if first.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:  # streaming: the Task opened the stream
        first = await client.get_task(GetTaskRequest(id=first.id), context=AUTH)
    assert first.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    await events_of(client, message("the big one", task_id=first.id, context_id=first.context_id))
    second = await client.get_task(GetTaskRequest(id=first.id), context=AUTH)
    assert second.status.state == TaskState.TASK_STATE_COMPLETED and "got: the big one" in text_of(second)


@pytest.mark.parametrize("client", [True], indirect=True, ids=["stream"])
async def test_errors_come_as_the_sdk_s_a2a_errors(client: Client) -> None:
    with pytest.raises(TaskNotFoundError, match="no-such-task"):
        await client.get_task(GetTaskRequest(id="no-such-task"), context=AUTH)
    done = (await events_of(client, message("echo done")))[0].task
    with pytest.raises(UnsupportedOperationError, match="takes no more messages"):
        await events_of(client, message("echo again", task_id=done.id))
    with pytest.raises(UnsupportedOperationError, match="nothing to subscribe to"):
        [e async for e in client.subscribe(SubscribeToTaskRequest(id=done.id), context=AUTH)]


async def test_a_call_without_the_token_is_refused_unauthenticated(card: AgentCard) -> None:
    address = card.supported_interfaces[0].url
    async with grpc.aio.insecure_channel(address) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTask(GetTaskRequest(id="anything"), metadata=(("a2a-version", "1.0"),))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "authorization" in (refused.value.details() or "")
        wrong = (("a2a-version", "1.0"), ("authorization", "Bearer wrong"))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            [e async for e in stub.SendStreamingMessage(message("echo hi"), metadata=wrong)]
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_version_other_than_1_0_and_the_unoffered_operations_are_refused(card: AgentCard) -> None:
    async with grpc.aio.insecure_channel(card.supported_interfaces[0].url) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        auth = ("authorization", f"Bearer {TOKEN}")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTask(GetTaskRequest(id="x"), metadata=(("a2a-version", "0.3"), auth))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetExtendedAgentCard(GetExtendedAgentCardRequest(), metadata=(auth,))
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SendMessage(SendMessageRequest(message=Message(role=Role.ROLE_USER)), metadata=(auth,))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, "a message without id or parts"
        assert "message" in (refused.value.details() or "")


async def test_a_client_that_goes_away_ends_its_stream_and_with_cancel_on_disconnect_the_task() -> None:
    probe = Probe()
    with serve_app(create_app(scripted_agent(probe=probe), grpc_port=0, cancel_on_disconnect=True)) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
        address = next(i.url for i in card.supported_interfaces if i.protocol_binding == "GRPC")
        async with grpc.aio.insecure_channel(address) as channel:
            call = a2a_pb2_grpc.A2AServiceStub(channel).SendStreamingMessage(message("sleep 30"))
            task_id = (await call.read()).task.id
            call.cancel()
        await until(lambda: probe.canceled_at(task_id) is not None, "the agent to see its task canceled")
