"""The gateway calls real a2a-sdk 1.3 servers (plain v1.0, 0.3 through the SDK's compatibility layer, and gRPC).

The binding comes from the card the SDK serves at ``/.well-known/agent-card.json``: JSON-RPC
1.0, or 0.3 where that is all the card offers, or gRPC where that is all it offers. Each
server is used as the issue lists: registered by URL on the gateway service, as an agent tool
in the three modes, cut off by a budget and by an idle timeout (each cancel acknowledged: the
SDK task ends canceled and its executor's cancel ran), and as a handoff target from a local
agent and from a remote Switchboard agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from agent_server import Handoff as HandoffLine, HostedAgent, TaskContext, TextChunk, create_app
from gateway import Agent, AgentToolTimeout, BudgetExceeded, Gateway, HostAllowlist, Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from tests.support.agent_tools import call_events, progress_texts, types_of
from tests.support.sdk_agents import SdkAgent, serve_sdk_agent, serve_sdk_grpc_agent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=["1.0", "0.3", "grpc"])
def sdk(request: pytest.FixtureRequest) -> Iterator[tuple[str, SdkAgent, str]]:
    """An a2a-sdk server, its executor and the binding the gateway should pick from its card."""
    if request.param == "grpc":
        with serve_sdk_grpc_agent() as (url, executor):
            yield url, executor, "grpc-1.0"
        return
    with serve_sdk_agent(v03=request.param == "0.3") as (url, executor):
        yield url, executor, f"jsonrpc-{request.param}"


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        yield gateway


async def test_registered_by_url_the_gateway_shows_the_binding_it_chose(
    sdk: tuple[str, SdkAgent, str], triage_gateway_url: str
) -> None:
    url, _, binding = sdk
    async with httpx.AsyncClient(base_url=triage_gateway_url, timeout=30) as http:
        registered = await http.post("/agents", json={"url": url})
        assert registered.status_code == 201, registered.text
        [info] = [a for a in (await http.get("/agents")).json()["agents"] if a["name"] == "sdk_helper"]
    assert info["kind"] == "remote" and info["binding"] == binding and info["streaming"] is True


async def test_sync_streaming_and_conversational_tools_over_the_sdk_server(
    sdk: tuple[str, SdkAgent, str], gateway: Gateway
) -> None:
    url, _, binding = sdk
    gateway.add_agent_tool("sdk_sync", url)
    gateway.add_agent_tool("sdk_stream", url, mode="streaming")
    gateway.add_agent_tool(
        "sdk_chat", url, mode={"conversational": {"next_input": lambda question, so_far: "the blue one"}}
    )

    result = await gateway.call_tool("sdk_sync", "hello", run_id="r-sync")
    assert (result.state, result.text) == ("completed", "echo: hello")
    invoked = (await call_events(gateway, "r-sync"))[0]
    assert invoked.type == "agent_tool_invoked" and invoked.fields["binding"] == binding

    result = await gateway.call_tool("sdk_stream", "stream 3 0.01 0.001", run_id="r-stream")
    assert result.state == "completed" and result.text == "chunk-0 chunk-1 chunk-2 "
    assert result.cost_usd == pytest.approx(0.003), "metadata.cost_usd of each update is counted"
    events = await call_events(gateway, "r-stream")
    assert progress_texts(events) == ["chunk-0 ", "chunk-1 ", "chunk-2 "]

    result = await gateway.call_tool("sdk_chat", "ask", run_id="r-chat")
    assert result.state == "completed" and result.text.endswith("got the blue one")
    assert result.turns == 2, "the answer to input-required went to the same SDK task"


async def test_a_budget_cutoff_cancels_the_sdk_task_acknowledged(
    sdk: tuple[str, SdkAgent, str], gateway: Gateway
) -> None:
    url, executor, _ = sdk
    gateway.add_agent_tool("sdk_spender", url, mode="streaming", budget={"max_cost_usd": 0.0035})
    with pytest.raises(BudgetExceeded) as caught:
        await gateway.call_tool("sdk_spender", "stream 200 0.01 0.001", run_id="r-budget")
    partial = caught.value.partial
    assert partial is not None and partial.text == "chunk-0 chunk-1 chunk-2 "
    terminated = (await call_events(gateway, "r-budget"))[-1].fields
    assert terminated["reason"] == "budget_exceeded" and terminated["cancel_acknowledged"] is True
    assert partial.task_id in executor.canceled
    assert (await gateway.peer(url).get(partial.task_id or "")).status.state.value == "canceled"


async def test_an_idle_timeout_cancels_the_sdk_task_acknowledged(
    sdk: tuple[str, SdkAgent, str], gateway: Gateway
) -> None:
    url, executor, _ = sdk
    gateway.add_agent_tool("sdk_sleeper", url, mode="streaming", streaming={"idle_timeout_secs": 0.3})
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("sdk_sleeper", "sleep 30", run_id="r-idle")
    assert caught.value.reason == "idle_timeout" and caught.value.partial is not None
    events = await call_events(gateway, "r-idle")
    assert types_of(events)[-1] == "terminated" and events[-1].fields["cancel_acknowledged"] is True
    assert caught.value.partial.task_id in executor.canceled


async def test_a_local_agent_hands_off_to_the_sdk_agent(sdk: tuple[str, SdkAgent, str], gateway: Gateway) -> None:
    url, _, _ = sdk
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_sdk_helper", arguments={})])]
        ),
    )
    runner = Runner(triage, gateway=gateway)
    helper = await runner.register_remote(url)
    triage.add_handoff(helper)
    response = await runner.run_async("cust-sdk-1", "please help")
    assert response.active_agent_name == "sdk_helper"
    assert response.content.startswith("echo: please help")


def _desk(sdk_url: str) -> HostedAgent:
    """A remote Switchboard agent that hands every conversation to the a2a-sdk agent, by URI."""

    async def desk(ctx: TaskContext) -> AsyncIterator[Any]:
        yield TextChunk("Desk: passing you on. ")
        yield HandoffLine(sdk_url, "the sdk agent knows")

    return HostedAgent("desk", desk, description="The front desk.")


async def test_a_remote_switchboard_agent_hands_off_to_the_sdk_agent(
    sdk: tuple[str, SdkAgent, str], gateway: Gateway
) -> None:
    url, _, _ = sdk
    with serve_app(create_app(_desk(url))) as desk_url:
        front = Agent(
            "front",
            model=ScriptedModel([ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_desk", arguments={})])]),
        )
        runner = Runner(front, gateway=gateway)
        front.add_handoff(await runner.register_remote(desk_url))
        response = await runner.run_async("cust-sdk-2", "I need the sdk")
    hops = [(e.fields["source"], e.fields["target"]) for e in response.events_of("handoff")]
    assert hops == [("front", "desk"), ("desk", "sdk_helper")]
    assert response.active_agent_name == "sdk_helper"
    assert response.content.startswith("echo: I need the sdk")
