"""The gateway calls a real a2a-sdk 1.3 agent that speaks only gRPC (its card, over HTTP, offers nothing else).

The agent is registered by the URL of its card, like any other; the gateway picks the gRPC
interface, on the host it was given, and uses it as an agent tool in the three modes, cut
off by a budget and by an idle timeout (each cancel acknowledged: the SDK task ends canceled
and its executor's cancel ran), as a handoff target, and with a stream picked up again after
a cut. A Switchboard agent server's own gRPC binding is reached the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import grpc
import httpx
import pytest

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway import Agent, AgentToolTimeout, BudgetExceeded, Gateway, HostAllowlist, Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.peers.base import Resubscribed, items_of
from gateway.peers.discovery import HttpAgentPeer, grpc_on_host
from gateway.peers.grpc import GrpcPeer
from protocol import Message, StatusEvent, TaskSendParams, TextPart
from tests.support.agent_tools import call_events, progress_texts, types_of
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
    assert grpc_on_host("http://10.0.0.5:8000", "localhost:50051") == "10.0.0.5:50051"
    assert grpc_on_host("https://agent.example:443", "https://evil.example:7000/a2a") == "agent.example:7000"
    assert grpc_on_host("http://[::1]:8000", "[::1]:9000") == "[::1]:9000"
    assert grpc_on_host("http://10.0.0.5:8000", "no-port-here") == "10.0.0.5:8000"


async def test_registered_by_url_the_gateway_shows_the_grpc_binding(
    sdk: tuple[str, SdkAgent], triage_gateway_url: str
) -> None:
    url, _ = sdk
    async with httpx.AsyncClient(base_url=triage_gateway_url, timeout=30) as http:
        registered = await http.post("/agents", json={"url": url})
        assert registered.status_code == 201, registered.text
        [info] = [a for a in (await http.get("/agents")).json()["agents"] if a["name"] == "sdk_helper"]
    assert info["kind"] == "remote" and info["binding"] == "grpc-1.0" and info["streaming"] is True


async def test_sync_streaming_and_conversational_tools_over_grpc(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, _ = sdk
    gateway.add_agent_tool("sdk_sync", url)
    gateway.add_agent_tool("sdk_stream", url, mode="streaming")
    gateway.add_agent_tool(
        "sdk_chat", url, mode={"conversational": {"next_input": lambda question, so_far: "the blue one"}}
    )

    result = await gateway.call_tool("sdk_sync", "hello", run_id="r-sync")
    assert (result.state, result.text) == ("completed", "echo: hello")
    invoked = (await call_events(gateway, "r-sync"))[0]
    assert invoked.type == "agent_tool_invoked" and invoked.fields["binding"] == "grpc-1.0"

    result = await gateway.call_tool("sdk_stream", "stream 3 0.01 0.001", run_id="r-stream")
    assert result.state == "completed" and result.text == "chunk-0 chunk-1 chunk-2 "
    assert result.cost_usd == pytest.approx(0.003), "metadata.cost_usd of each update is counted"
    assert progress_texts(await call_events(gateway, "r-stream")) == ["chunk-0 ", "chunk-1 ", "chunk-2 "]

    result = await gateway.call_tool("sdk_chat", "ask", run_id="r-chat")
    assert result.state == "completed" and result.text.endswith("got the blue one")
    assert result.turns == 2, "the answer to input-required went to the same SDK task"


async def test_a_budget_cutoff_cancels_the_sdk_task_acknowledged(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, executor = sdk
    gateway.add_agent_tool("sdk_spender", url, mode="streaming", budget={"max_cost_usd": 0.0035})
    with pytest.raises(BudgetExceeded) as caught:
        await gateway.call_tool("sdk_spender", "stream 200 0.01 0.001", run_id="r-budget")
    partial = caught.value.partial
    assert partial is not None and partial.text == "chunk-0 chunk-1 chunk-2 "
    terminated = (await call_events(gateway, "r-budget"))[-1].fields
    assert terminated["reason"] == "budget_exceeded" and terminated["cancel_acknowledged"] is True
    assert partial.task_id in executor.canceled
    assert (await gateway.peer(url).get(partial.task_id or "")).status.state.value == "canceled"


async def test_an_idle_timeout_cancels_the_sdk_task_acknowledged(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, executor = sdk
    gateway.add_agent_tool("sdk_sleeper", url, mode="streaming", streaming={"idle_timeout_secs": 0.3})
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("sdk_sleeper", "sleep 30", run_id="r-idle")
    assert caught.value.reason == "idle_timeout" and caught.value.partial is not None
    events = await call_events(gateway, "r-idle")
    assert types_of(events)[-1] == "terminated" and events[-1].fields["cancel_acknowledged"] is True
    assert caught.value.partial.task_id in executor.canceled


async def test_a_local_agent_hands_off_to_the_grpc_agent(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, _ = sdk
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_sdk_helper", arguments={})])]
        ),
    )
    runner = Runner(triage, gateway=gateway)
    helper = await runner.register_remote(url)
    triage.add_handoff(helper)
    response = await runner.run_async("cust-grpc-1", "please help")
    assert response.active_agent_name == "sdk_helper"
    assert response.content.startswith("echo: please help")


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
async def _cut_after_one_chunk(context: AbstractAsyncContextManager[Any]) -> AsyncIterator[_CutCall]:
    async with context as call:
        yield _CutCall(call)


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
