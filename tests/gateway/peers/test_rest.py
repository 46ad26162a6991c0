"""The gateway calls a real a2a-sdk 1.3 server that serves only HTTP+JSON (REST), and a Switchboard agent over it.

The SDK server's card offers one interface, HTTP+JSON 1.0, so the gateway must choose the
REST peer: registered by URL, used as an agent tool in the three modes, cut off by a budget
and by an idle timeout (each cancel acknowledged: the SDK task ends canceled and its
executor's cancel ran), a handoff target, and a stream cut in the middle picked up with
``POST /tasks/{id}:subscribe`` with nothing lost or doubled (through our own server, whose
card also leads there once the others are taken off it). Which binding a card leads to when
it offers several is checked last.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from agent_server import create_app
from agent_server.testing import scripted_agent
from gateway import Agent, AgentToolTimeout, BudgetExceeded, Gateway, HostAllowlist, Runner
from gateway.errors import PeerHTTPError, PeerProtocolError
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.peers.discovery import choose_binding
from protocol import A2A_V1, GRPC_BINDING, HTTP_JSON_BINDING, JSONRPC_BINDING, NDJSON_BINDING, AgentCard
from tests.support.agent_tools import call_events, progress_texts
from tests.support.cutting_proxy import cutting_proxy
from tests.support.sdk_agents import SdkAgent, serve_sdk_agent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

BINDING = "http+json-1.0"


@pytest.fixture(scope="module")
def sdk() -> Iterator[tuple[str, SdkAgent]]:
    with serve_sdk_agent(rest=True) as served:
        yield served


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        yield gateway


def rest_only() -> object:
    """The scripted agent, its card offering HTTP+JSON only."""
    agent = scripted_agent()
    standard_card = agent.card

    def card(url: str) -> AgentCard:
        full = standard_card(url)
        kept = [i for i in full.supported_interfaces if i.protocol_binding == HTTP_JSON_BINDING]
        return full.model_copy(update={"supported_interfaces": kept, "additional_interfaces": None})

    agent.card = card  # type: ignore[method-assign]
    return agent


async def test_registered_by_url_the_gateway_shows_it_chose_http_json(
    sdk: tuple[str, SdkAgent], triage_gateway_url: str
) -> None:
    url, _ = sdk
    async with httpx.AsyncClient(base_url=triage_gateway_url, timeout=30) as http:
        registered = await http.post("/agents", json={"url": url})
        assert registered.status_code == 201, registered.text
        [info] = [a for a in (await http.get("/agents")).json()["agents"] if a["name"] == "sdk_helper"]
    assert info["kind"] == "remote" and info["binding"] == BINDING and info["streaming"] is True


async def test_the_three_modes_over_the_rest_only_sdk_server(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, _ = sdk
    gateway.add_agent_tool("rest_sync", url)
    gateway.add_agent_tool("rest_stream", url, mode="streaming")
    gateway.add_agent_tool("rest_chat", url, mode={"conversational": {"next_input": lambda q, so_far: "the red one"}})

    result = await gateway.call_tool("rest_sync", "hello", run_id="rest-sync")
    assert (result.state, result.text) == ("completed", "echo: hello")
    assert (await call_events(gateway, "rest-sync"))[0].fields["binding"] == BINDING

    result = await gateway.call_tool("rest_stream", "stream 3 0.01 0.001", run_id="rest-stream")
    assert (result.state, result.text) == ("completed", "chunk-0 chunk-1 chunk-2 ")
    assert result.cost_usd == pytest.approx(0.003)
    assert progress_texts(await call_events(gateway, "rest-stream")) == ["chunk-0 ", "chunk-1 ", "chunk-2 "]

    result = await gateway.call_tool("rest_chat", "ask", run_id="rest-chat")
    assert result.state == "completed" and result.text.endswith("got the red one") and result.turns == 2

    task = await gateway.peer(url).get(result.task_id or "")
    assert task.status.state.value == "completed"
    with pytest.raises(PeerHTTPError) as missing:
        await gateway.peer(url).get("no-such-task")
    assert missing.value.status == 404 and missing.value.code == -32001, "the A2A code read from the ErrorInfo"


async def test_a_budget_cutoff_and_an_idle_timeout_cancel_the_sdk_task(
    sdk: tuple[str, SdkAgent], gateway: Gateway
) -> None:
    url, executor = sdk
    limits = {
        "rest_spender": {"budget": {"max_cost_usd": 0.0035}},
        "rest_sleeper": {"streaming": {"idle_timeout_secs": 0.3}},
    }
    for name, limit in limits.items():
        gateway.add_agent_tool(name, url, mode="streaming", **limit)  # type: ignore[arg-type]

    with pytest.raises(BudgetExceeded) as spent:
        await gateway.call_tool("rest_spender", "stream 200 0.01 0.001", run_id="rest-budget")
    partial = spent.value.partial
    assert partial is not None and (partial.text, partial.task_id in executor.canceled) == (
        "chunk-0 chunk-1 chunk-2 ",
        True,
    )
    assert (await call_events(gateway, "rest-budget"))[-1].fields["cancel_acknowledged"] is True

    with pytest.raises(AgentToolTimeout) as idle:
        await gateway.call_tool("rest_sleeper", "sleep 30", run_id="rest-idle")
    assert idle.value.reason == "idle_timeout" and idle.value.partial is not None
    assert (await call_events(gateway, "rest-idle"))[-1].fields["cancel_acknowledged"] is True
    assert idle.value.partial.task_id in executor.canceled
    assert (await gateway.peer(url).get(idle.value.partial.task_id or "")).status.state.value == "canceled"


async def test_a_local_agent_hands_off_to_the_rest_only_agent(sdk: tuple[str, SdkAgent], gateway: Gateway) -> None:
    url, _ = sdk
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_sdk_helper", arguments={})])]
        ),
    )
    runner = Runner(triage, gateway=gateway)
    triage.add_handoff(await runner.register_remote(url))
    response = await runner.run_async("cust-rest-1", "please help")
    assert response.active_agent_name == "sdk_helper" and response.content.startswith("echo: please help")


async def test_a_stream_cut_in_the_middle_is_resubscribed_over_rest(gateway: Gateway) -> None:
    with serve_app(create_app(rest_only())) as url, serve_app(cutting_proxy(url)) as proxy:  # type: ignore[arg-type]
        gateway.add_agent_tool("rest_streamer", proxy, mode="streaming")
        result = await gateway.call_tool("rest_streamer", "stream 6 0.05 0.001", run_id="rest-cut")
        assert gateway.peer(proxy).binding == BINDING
    assert result.state == "completed" and result.text == "".join(f"chunk-{i} " for i in range(6))
    assert result.cost_usd == pytest.approx(0.006)
    kinds = [e.fields.get("kind") for e in await call_events(gateway, "rest-cut") if e.type == "agent_tool_progress"]
    assert kinds.count("resubscribed") == 1


def test_http_json_is_chosen_only_when_the_card_offers_neither_ndjson_nor_json_rpc() -> None:
    base = "http://127.0.0.1:8001"

    def card(*interfaces: tuple[str, str]) -> AgentCard:
        listed = [{"url": f"{base}/{b.lower()}", "protocolBinding": b, "protocolVersion": v} for b, v in interfaces]
        return AgentCard.model_validate({"name": "x", "supportedInterfaces": listed})

    rest = (HTTP_JSON_BINDING, A2A_V1)
    assert choose_binding(card(rest), base, base) == (HTTP_JSON_BINDING, A2A_V1, f"{base}/http+json")
    assert choose_binding(card(rest, (JSONRPC_BINDING, "0.3")), base, base)[0] == JSONRPC_BINDING
    assert choose_binding(card(rest, (NDJSON_BINDING, "1.0")), base, base)[0] == NDJSON_BINDING
    assert choose_binding(card((GRPC_BINDING, A2A_V1), rest), base, base)[0] == HTTP_JSON_BINDING, "gRPC comes last"
    with pytest.raises(PeerProtocolError) as refused:
        choose_binding(card((HTTP_JSON_BINDING, "0.3")), base, base)
    assert refused.value.reason == "no_binding" and "HTTP+JSON 1.0" in refused.value.message
