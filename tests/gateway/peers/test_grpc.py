"""The gateway over gRPC: what only this binding has.

A real a2a-sdk 1.3 agent that speaks only gRPC is also among the servers of
test_a2a_sdk_server.py (registered by URL, an agent tool in the three modes, cut off by a
budget and an idle timeout with the cancel acknowledged, a handoff target). Here: the gRPC
interface is called on the host the agent was registered at, a stream cut short is picked up
by ``SubscribeToTask``, and a Switchboard agent server's own gRPC binding is reached the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import grpc
import pytest

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway import Gateway, HostAllowlist
from gateway.peers.base import Resubscribed, items_of
from gateway.peers.discovery import HttpAgentPeer, choose_binding, grpc_on_host
from gateway.peers.grpc import GrpcPeer
from protocol import GRPC_BINDING, AgentCard, AgentInterface, Message, StatusEvent, TaskSendParams, TextPart
from tests.support.sdk_agents import SdkAgent, serve_sdk_grpc_agent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def sdk() -> Iterator[tuple[str, SdkAgent]]:
    with serve_sdk_grpc_agent() as served:
        yield served


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        yield gateway


def test_a_grpc_interface_is_called_on_the_host_the_agent_was_registered_at() -> None:
    offered = AgentCard(
        name="x",
        supported_interfaces=[AgentInterface(url="elsewhere:9443", protocol_binding="GRPC", protocol_version="1.0")],
    )
    assert choose_binding(offered, "http://10.0.0.5:8000", "u") == (GRPC_BINDING, "1.0", "10.0.0.5:9443")
    assert grpc_on_host("http://10.0.0.5:8000", "localhost:50051") == "10.0.0.5:50051"
    assert grpc_on_host("https://agent.example:443", "https://evil.example:7000/a2a") == "agent.example:7000"
    assert grpc_on_host("http://[::1]:8000", "[::1]:9000") == "[::1]:9000"
    assert grpc_on_host("http://10.0.0.5:8000", "no-port-here") == "10.0.0.5:8000"


async def test_a_stream_cut_short_is_picked_up_by_subscribe_to_task(
    sdk: tuple[str, SdkAgent], gateway: Gateway
) -> None:
    """The first call's stream is cancelled under the peer after its first chunk: the rest comes by SubscribeToTask."""
    url, _ = sdk
    peer = await gateway.peer(url).resolve()
    assert isinstance(peer, GrpcPeer)
    opened: list[object] = []
    original = peer._open

    def cut_first(method: str, request: object, on_sent: object = None) -> object:
        context = original(method, request, on_sent)  # type: ignore[arg-type]
        if method != "SendStreamingMessage":
            return context
        opened.append(method)
        return _cut_after_one_chunk(context)

    peer._open = cut_first  # type: ignore[method-assign]
    params = TaskSendParams(message=Message(role="user", parts=[TextPart(text="stream 4 0.3 0")]))
    reads = []
    async with peer.subscribe(params) as stream:
        async for read in stream:
            reads.extend(items_of(read))
    assert opened == ["SendStreamingMessage"]
    assert any(isinstance(item, Resubscribed) for item in reads), "the cut was picked up"
    texts = "".join(item.artifact.parts[0].text for item in reads if hasattr(item, "artifact"))  # type: ignore[union-attr]
    assert texts == "chunk-0 chunk-1 chunk-2 chunk-3 ", "nothing lost, nothing twice"
    assert isinstance(reads[-1], StatusEvent) and reads[-1].final


class _CutCall:
    """A streaming call that ends (as a connection that broke would) after its first artifact update."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.cut = False

    async def read(self) -> Any:
        if self.cut:
            self.call.cancel()
            return grpc.aio.EOF
        message = await self.call.read()
        self.cut = message is not grpc.aio.EOF and message.HasField("artifact_update")
        return message


@asynccontextmanager
async def _cut_after_one_chunk(context: AbstractAsyncContextManager[Any]) -> AsyncIterator[tuple[_CutCall, Any]]:
    async with context as (call, first):
        yield _CutCall(call), first


async def test_a_switchboard_agent_server_over_its_own_grpc_binding(gateway: Gateway) -> None:
    """Our server's card offers NDJSON first; a card left with only its gRPC interface leads the gateway there."""
    with serve_app(create_app(scripted_agent(), grpc_port=0)) as url:
        peer = gateway.peer(url)
        assert isinstance(peer, HttpAgentPeer)
        card = await peer.card()
        grpc_only = card.model_copy(update={"supported_interfaces": card.interfaces()[-1:]})
        chosen = peer._peer_for(grpc_only)
        assert isinstance(chosen, GrpcPeer)
        try:
            task = await chosen.send(TaskSendParams(message=Message(role="user", parts=[TextPart(text="echo hi")])))
            assert task.status.state.value == "completed" and task.artifacts[0].parts[0].text == "hi"  # type: ignore[union-attr]
        finally:
            await chosen.aclose()
