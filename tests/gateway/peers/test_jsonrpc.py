"""The gateway's JSON-RPC peer against Switchboard agents that offer only JSON-RPC (1.0, or 0.3) on their card.

With the NDJSON binding gone from the card the gateway must speak standard A2A to them, so
everything the scripted agent can do is checked over SSE: cost in ``metadata.cost_usd`` and a
budget cutoff whose cancel reached the agent's code, a handoff request in ``metadata.handoff``
taken by a swarm (a remote member handing back to a local agent), a ``timeout_ms`` cancel in
sync mode, a stream cut in the middle (a proxy ends the first response after a few
events) picked up by ``SubscribeToTask`` / ``tasks/resubscribe`` with nothing lost or doubled;
one pool of connections shared with the NDJSON binding (a JSON-RPC stream holding the only
connection makes an NDJSON call wait, and fail ``pool_exhausted``; the slot is free again when
the stream is left); and which binding a card leads to, on the host the agent was registered at
whatever the card says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from agent_server import create_app
from agent_server.testing import Probe, scripted_agent
from gateway import Agent, AgentToolTimeout, BudgetExceeded, Gateway, HostAllowlist, PeerLimits, PoolExhausted, Runner
from gateway.errors import PeerProtocolError
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.peers.discovery import choose_binding
from protocol import JSONRPC_BINDING, AgentCard
from tests.support.agent_tools import call_events
from tests.support.servers import serve_app
from tests.support.waiting import until

pytestmark = pytest.mark.anyio

PROBE = Probe()
CUT_AFTER_EVENTS = 3


def jsonrpc_only(version: str) -> object:
    """The scripted agent, its card offering JSON-RPC ``version`` only."""
    agent = scripted_agent(probe=PROBE)
    standard_card = agent.card

    def card(url: str) -> AgentCard:
        full = standard_card(url)
        kept = [
            i
            for i in full.supported_interfaces or []
            if i.protocol_binding == JSONRPC_BINDING and i.protocol_version == version
        ]
        return full.model_copy(
            update={"supported_interfaces": kept, "additional_interfaces": None, "protocol_version": version}
        )

    agent.card = card  # type: ignore[method-assign]
    return agent


@pytest.fixture(scope="module", params=["1.0", "0.3"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    with serve_app(create_app(jsonrpc_only(request.param))) as url:  # type: ignore[arg-type]
        yield url, f"jsonrpc-{request.param}"


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        yield gateway


async def test_the_card_leads_the_gateway_to_json_rpc_and_costs_add_up_to_a_budget_cutoff(
    served: tuple[str, str], gateway: Gateway
) -> None:
    url, binding = served
    gateway.add_agent_tool("spender", url, mode="streaming", budget={"max_cost_usd": 0.0035})
    with pytest.raises(BudgetExceeded) as caught:
        await gateway.call_tool("spender", "stream 200 0.01 0.001", run_id="r-budget")
    partial = caught.value.partial
    assert partial is not None and partial.text == "chunk-0 chunk-1 chunk-2 "
    assert partial.cost_usd == pytest.approx(0.004)
    events = await call_events(gateway, "r-budget")
    assert events[0].fields["binding"] == binding
    assert events[-1].fields["reason"] == "budget_exceeded" and events[-1].fields["cancel_acknowledged"] is True
    assert PROBE.wait_canceled(partial.task_id or "", timeout_s=30) is not None, "the cancel reached the agent's code"


async def test_a_sync_call_past_timeout_ms_is_canceled_by_the_id_the_server_named(
    served: tuple[str, str], gateway: Gateway
) -> None:
    url, _ = served
    gateway.add_agent_tool("slow", url, timeout_ms=300)
    with pytest.raises(AgentToolTimeout) as caught:
        await gateway.call_tool("slow", "sleep 30", run_id="r-slow")
    partial = caught.value.partial
    assert partial is not None and partial.task_id
    terminated = (await call_events(gateway, "r-slow"))[-1].fields
    assert terminated["reason"] == "timeout" and terminated["cancel_acknowledged"] is True
    assert (await gateway.peer(url).get(partial.task_id)).status.state.value == "canceled"


async def test_a_remote_member_over_json_rpc_hands_back_to_a_local_agent(
    served: tuple[str, str], gateway: Gateway
) -> None:
    url, _ = served
    desk = Agent(
        "desk",
        model=ScriptedModel(
            [
                ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_scripted", arguments={})]),
                ModelResponse(content="Desk again."),
            ]
        ),
    )
    runner = Runner(desk, gateway=gateway)
    desk.add_handoff(await runner.register_remote(url))
    response = await runner.run_async("cust-rpc", "handoff desk back to you")
    hops = [(e.fields["source"], e.fields["target"], e.fields["remote"]) for e in response.events_of("handoff")]
    assert hops == [("desk", "scripted", True), ("scripted", "desk", True)]
    assert response.active_agent_name == "desk" and response.content == "Desk again."


def cutting_proxy(target: str) -> Starlette:
    """Forwards every JSON-RPC request to ``target``; the first stream of each task is ended after a few events."""
    cut: set[bytes] = set()

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        client = httpx.AsyncClient(timeout=30)
        upstream = await client.send(
            client.build_request("POST", target + "/", content=body, headers=headers), stream=True
        )
        cutting = b'"message/stream"' in body or b'"SendStreamingMessage"' in body
        first = body not in cut
        cut.add(body)

        async def relay() -> AsyncIterator[bytes]:
            events = 0
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
                    events += chunk.count(b"\n\n")
                    if cutting and first and events >= CUT_AFTER_EVENTS:
                        return
            finally:
                await upstream.aclose()
                await client.aclose()

        media_type = upstream.headers.get("content-type")
        return StreamingResponse(relay(), status_code=upstream.status_code, media_type=media_type)

    async def card(request: Request) -> Response:
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.get(target + request.url.path)
        return Response(answer.content, media_type="application/json")

    return Starlette(routes=[Route("/", forward, methods=["POST"]), Route("/.well-known/{name}", card)])


async def test_a_stream_cut_in_the_middle_is_resubscribed_and_reads_as_if_it_never_broke(
    served: tuple[str, str], gateway: Gateway
) -> None:
    url, _ = served
    with serve_app(cutting_proxy(url)) as proxy:
        gateway.add_agent_tool("streamer", proxy, mode="streaming")
        result = await gateway.call_tool("streamer", "stream 6 0.05 0.001", run_id="r-cut")
    assert result.state == "completed"
    assert result.text == "".join(f"chunk-{i} " for i in range(6)), "every chunk once"
    assert result.cost_usd == pytest.approx(0.006)
    kinds = [e.fields.get("kind") for e in await call_events(gateway, "r-cut") if e.type == "agent_tool_progress"]
    assert kinds.count("resubscribed") == 1


async def test_a_json_rpc_stream_and_an_ndjson_call_share_one_pool_of_connections(
    served: tuple[str, str], scripted_url: str
) -> None:
    url, binding = served
    limits = PeerLimits(max_connections=1, pool_timeout_s=0.5)
    async with Gateway(limits=limits, allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        gateway.add_agent_tool("streamer", url, mode="streaming")
        gateway.add_agent_tool("echo", scripted_url)

        async def hold_the_only_connection() -> None:
            await gateway.call_tool("streamer", "stream 200 0.05 0", run_id="r-hold")

        async with anyio.create_task_group() as group:
            group.start_soon(hold_the_only_connection)

            async def streaming() -> bool:
                if "r-hold" not in await gateway.event_log.list_runs():
                    return False
                return any(e.type == "agent_tool_progress" for e in await gateway.event_log.read("r-hold"))

            await until(streaming, "the JSON-RPC stream's first chunk")
            with pytest.raises(PoolExhausted) as caught:
                await gateway.call_tool("echo", "echo hi", run_id="r-wait")
            group.cancel_scope.cancel()
        result = await gateway.call_tool("echo", "echo hi", run_id="r-after")
        invoked = [e for e in await call_events(gateway, "r-hold") if e.type == "agent_tool_invoked"]
    assert invoked[0].fields["binding"] == binding
    assert caught.value.reason == "pool_exhausted" and "all 1 connections" in caught.value.message
    assert result.state == "completed" and result.text == "hi", "the stream left gave its connection back"


def test_the_binding_is_chosen_from_the_card_and_kept_on_the_registered_host() -> None:
    def card(*interfaces: tuple[str, str, str]) -> AgentCard:
        listed = [{"url": u, "protocolBinding": b, "protocolVersion": v} for b, v, u in interfaces]
        return AgentCard.model_validate({"name": "x", "supportedInterfaces": listed})

    base = "http://127.0.0.1:8001"
    both = card(("JSONRPC", "0.3", "http://evil.example:81/v03"), ("JSONRPC", "1.0.2", "http://evil.example:81/rpc"))
    assert choose_binding(both, base, base) == (JSONRPC_BINDING, "1.0", "http://127.0.0.1:8001/rpc")
    ndjson = card(("JSONRPC", "1.0", base), ("urn:switchboard:a2a-ndjson", "1.0", base + "/agent"))
    assert choose_binding(ndjson, base, base)[0] == "urn:switchboard:a2a-ndjson"
    legacy = AgentCard.model_validate({"name": "x", "url": "http://other/a2a", "protocolVersion": "0.3"})
    assert choose_binding(legacy, base, base) == (JSONRPC_BINDING, "0.3", "http://127.0.0.1:8001/a2a")
    with pytest.raises(PeerProtocolError) as refused:
        choose_binding(card(("GRPC", "0.3", base)), base, base)  # gRPC 1.0 is chosen: tests/gateway/peers/test_grpc.py
    assert refused.value.reason == "no_binding"
