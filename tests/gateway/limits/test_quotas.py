"""Limits per token in one process: counting per window, the 429 that names the limit, spend charged from events."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import grpc
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc

from agent_server import Principal, TokenTable
from gateway.limits.counters import MemoryCounters, Period, Window
from gateway.limits.quotas import Quotas, TokenLimits
from gateway.limits.redis import RedisCounters
from gateway.recording import spend
from gateway.recording.events import Event
from gateway.service import GatewayService, RemoteSpec, create_gateway_app
from tests.support.gateway_service import agent_server, billing_agent, triage_service
from tests.support.servers import serve_app

TOKENS = TokenTable(
    {"alice-secret": Principal("alice", "chat"), "bob-secret": Principal("bob", "chat"), "root": Principal("root")}
)
ALICE = {"authorization": "Bearer alice-secret"}
BOB = {"authorization": "Bearer bob-secret"}


def test_a_window_ends_on_its_boundary_and_its_count_with_it() -> None:
    period = Period.now(Window.MINUTE, clock=120.5)
    assert (period.index, period.ends_at, period.seconds_left(clock=120.5)) == (2, 180.0, 60)
    assert Period.now(Window.DAY, clock=86399.0).seconds_left(clock=86399.0) == 1

    async def main() -> None:
        counters = MemoryCounters()
        assert [await counters.increment("k", expires_at=10**12) for _ in range(3)] == [1, 2, 3]
        assert await counters.add("gone", 5.0, expires_at=1.0) == 5.0
        assert await counters.read("gone") == 0.0, "a key whose window ended counts from zero again"

    anyio.run(main)


def test_two_redis_counters_on_one_prefix_count_together(redis_url: str) -> None:
    async def main() -> None:
        first, second = RedisCounters(redis_url), RedisCounters(redis_url)
        try:
            ends = Period.now(Window.MINUTE).ends_at
            assert await first.increment("alice:rate", ends) == 1
            assert await second.increment("alice:rate", ends) == 2
            await first.add("alice:spend", 0.25, ends)
            assert await second.add("alice:spend", 0.5, ends) == pytest.approx(0.75)
            assert await first.read("alice:spend") == pytest.approx(0.75)
        finally:
            await first.aclose()
            await second.aclose()

    anyio.run(main)


def test_what_a_run_records_is_charged_to_its_owner() -> None:
    quotas = Quotas({"alice": TokenLimits(max_spend_usd=1.0)})

    async def main() -> None:
        model_call = Event.create(
            "model_call", "run_1", agent="a", model="m", system="s", duration_ms=1.0, cost_usd=0.4
        )
        remote = Event.create(
            "message", "run_1", agent="b", role="assistant", content="hi", tool_calls=[], remote=True, cost_usd=0.6
        )
        with spend.charged_to(quotas.meter("alice")):
            for event in (model_call, remote):
                charge = spend.bill(event)
                assert charge is not None
                await charge
        assert spend.bill(model_call) is None  # outside the block: charged to no one
        refusal = await quotas.spend_refusal("alice")
        assert refusal is not None and refusal.limit == "spend"
        assert "'alice' has spent $1 of its cap of $1 per day" in refusal.message
        assert await quotas.spend_refusal("bob") is None and quotas.meter("bob") is None

    anyio.run(main)


@pytest.fixture
def billing_url() -> Iterator[str]:
    with agent_server(billing_agent()) as url:
        yield url


def test_over_its_rate_a_token_gets_429_naming_the_limit_and_when_it_resets() -> None:
    service = triage_service(quotas=Quotas({"alice": TokenLimits(rate_per_minute=2)}))
    with serve_app(create_gateway_app(service, tokens=TOKENS)) as url, httpx.Client(base_url=url, timeout=30) as http:
        window = Period.now(Window.MINUTE)
        answers = [http.get("/sessions", headers=ALICE) for _ in range(3)]
        if Period.now(Window.MINUTE) != window:  # the minute turned between the requests: count again in this one
            answers = [http.get("/sessions", headers=ALICE) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        refused = answers[2]
        message = refused.json()["error"]["message"]
        assert "'alice' is over its rate limit of 2 requests a minute; it resets in" in message
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.json()["error"]["data"]["limit"] == "rate"
        assert http.get("/sessions", headers=BOB).status_code == 200, "another token has its own count"
        assert http.get("/health").status_code == 200, "a public path belongs to no token"
        metrics = http.get("/metrics", headers={"authorization": "Bearer root"}).text
        assert 'switchboard_token_refusals_total{limit="rate",token="alice"}' in metrics


def test_over_its_spend_cap_a_token_starts_no_turn_and_no_tool_call(billing_url: str) -> None:
    quotas = Quotas({"alice": TokenLimits(max_spend_usd=0.001)})
    service = GatewayService(starting_agent_name="billing", remotes=[RemoteSpec(billing_url, "billing")], quotas=quotas)
    with serve_app(create_gateway_app(service, tokens=TOKENS)) as url, httpx.Client(base_url=url, timeout=30) as http:
        first = http.post("/sessions/s1/messages", json={"message": "refund?", "stream": False}, headers=ALICE)
        assert first.status_code == 200, first.text
        again = http.post("/sessions/s1/messages", json={"message": "and now?", "stream": False}, headers=ALICE)
        assert again.status_code == 429, again.text
        message = again.json()["error"]["message"]
        assert "'alice' has spent $0.002 of its cap of $0.001 per day; new turns and tool calls are refused" in message
        assert int(again.headers["retry-after"]) >= 1
        assert http.get("/sessions", headers=ALICE).status_code == 200, "reading is not spending"
        face = {"jsonrpc": "2.0", "id": 1, "method": "message/send"}
        face["params"] = {"message": {"role": "user", "messageId": "m1", "parts": [{"kind": "text", "text": "hi"}]}}
        task = http.post("/", json=face, headers=ALICE).json()["result"]
        assert task["status"]["state"] == "failed" and "its cap of $0.001" in str(task["status"])
        proxied = http.post("/proxy/billing", json=face, headers=ALICE).json()["result"]["status"]
        assert proxied["state"] == "failed"
        assert proxied["message"]["parts"][0]["text"].startswith("the token 'alice' has spent $0.002 of its cap")
        metrics = http.get("/metrics", headers={"authorization": "Bearer root"}).text
        assert 'switchboard_token_spend_usd{token="alice"} 0.002' in metrics
        assert 'switchboard_token_refusals_total{limit="spend",token="alice"}' in metrics


def test_the_gateways_grpc_port_counts_against_the_same_rate() -> None:
    service = triage_service(quotas=Quotas({"alice": TokenLimits(rate_per_minute=2)}))
    app = create_gateway_app(service, tokens=TOKENS, grpc_port=0)

    async def calls(target: str) -> list[grpc.StatusCode]:
        codes: list[grpc.StatusCode] = []
        metadata = (("authorization", "Bearer alice-secret"),)
        async with grpc.aio.insecure_channel(target) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            for _ in range(3):
                try:
                    await stub.GetTask(a2a_pb2.GetTaskRequest(id="none"), metadata=metadata)
                except grpc.aio.AioRpcError as exc:
                    codes.append(exc.code())
        return codes

    with serve_app(app) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}, timeout=30).json()
        [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        window = Period.now(Window.MINUTE)
        codes = anyio.run(calls, target)
        if Period.now(Window.MINUTE) != window:  # the minute turned between the calls: count again in this one
            codes = anyio.run(calls, target)
    assert codes == [grpc.StatusCode.NOT_FOUND, grpc.StatusCode.NOT_FOUND, grpc.StatusCode.RESOURCE_EXHAUSTED]
