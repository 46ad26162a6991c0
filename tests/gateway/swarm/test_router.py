"""The semantic router: example utterances embedded once, a message routed straight to the closest
agent at or above the threshold (no triage model call), the decision and its score recorded;
remote agents' examples from their card's skills; the offline and the OpenAI-compatible embedders."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest

from agent_server import HostedAgent, TaskContext, create_app
from gateway import Agent, Gateway, HostAllowlist, Runner
from gateway.models import OfflineEmbedder, OpenAIEmbedder, ScriptedModel
from gateway.models.base import ModelResponse
from gateway.swarm import SemanticRouter
from protocol import AgentSkill
from tests.support.openai_endpoint import openai_endpoint
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

BILLING = ["I want a refund for my order", "I was charged twice on my card", "send me my invoice"]
TECH = ["the app crashes when I open it", "I cannot log in to my account", "error 500 on the website"]


class Counting:
    """An embedder that counts how many texts it was asked to embed, call by call."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[int] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.batches.append(len(texts))
        result: list[list[float]] = await self.inner.embed(texts)
        return result


def swarm() -> tuple[Agent, Agent, Agent]:
    """Triage's model has no script: any call to it fails the turn, so a routed turn proves it was skipped."""
    billing = Agent("Billing", model=ScriptedModel([ModelResponse(content="Billing here.")] * 5), examples=BILLING)
    tech = Agent("Tech", model=ScriptedModel([ModelResponse(content="Tech here.")] * 5), examples=TECH)
    triage = Agent("Triage", model=ScriptedModel([]), handoffs=[billing, tech])
    return triage, billing, tech


async def test_the_offline_embedder_is_deterministic_unit_length_and_zero_without_content_words() -> None:
    embedder = OfflineEmbedder()
    [first, again, nothing] = await embedder.embed(["Refunds for orders", "refund order", "please can you help"])
    assert first == again
    assert math.isclose(math.sqrt(sum(x * x for x in first)), 1.0)
    assert not any(nothing)
    assert len(first) == 1024


async def test_paraphrases_go_straight_to_the_closest_agent_without_the_triage_model() -> None:
    triage, _, _ = swarm()
    embedder = Counting(OfflineEmbedder())
    runner = Runner(triage, router=SemanticRouter(embedder))

    refund = await runner.run_async("a", "refund my order please")
    crash = await runner.run_async("b", "my app crashes as soon as I open it")

    assert (refund.active_agent_name, refund.content) == ("Billing", "Billing here.")
    assert (crash.active_agent_name, crash.content) == ("Tech", "Tech here.")
    [decision] = refund.events_of("router_decision")
    assert decision.fields["agent"] == "Triage"
    assert (decision.fields["candidate"], decision.fields["decision"]) == ("Billing", "route")
    assert decision.fields["example"] == "I want a refund for my order"
    assert decision.fields["score"] >= 0.85 and decision.fields["threshold"] == 0.85
    handoff = refund.events_of("handoff")[0].fields
    assert (handoff["source"], handoff["target"]) == ("Triage", "Billing")
    assert handoff["reason"].startswith("semantic router: ")
    assert refund.events_of("agent_changed")[0].fields["cause"] == "router"
    assert triage.get_model().calls == []
    assert embedder.batches == [6, 1, 1], "the examples once, then one message per turn"


async def test_below_the_threshold_the_router_abstains_and_the_active_agent_decides() -> None:
    triage, _, _ = swarm()
    triage.model = ScriptedModel([ModelResponse(content="Triage: tell me more.")])
    runner = Runner(triage, router=SemanticRouter(OfflineEmbedder()))
    response = await runner.run_async("s", "my parcel has not arrived, where is it")
    [decision] = response.events_of("router_decision")
    assert decision.fields["decision"] == "abstain"
    assert decision.fields["score"] < 0.85
    assert (response.active_agent_name, response.content) == ("Triage", "Triage: tell me more.")
    assert response.events_of("handoff") == []


async def test_the_agent_already_holding_the_conversation_stays_and_a_turn_without_transfers_refuses() -> None:
    triage, _, _ = swarm()
    runner = Runner(triage, router=SemanticRouter(OfflineEmbedder()))
    await runner.run_async("s", "refund my order please")
    again = await runner.run_async("s", "I want a refund for my order")
    assert again.events_of("router_decision")[0].fields["decision"] == "stay"
    assert again.events_of("handoff") == []
    assert again.active_agent_name == "Billing"

    triage.model = ScriptedModel([ModelResponse(content="Only triage today.")])
    strict = Runner(triage, router=SemanticRouter(OfflineEmbedder()), max_handoffs_per_turn=0)
    refused = await strict.run_async("t", "refund my order please")
    assert refused.events_of("router_decision")[0].fields["decision"] == "refused"
    assert refused.content == "Only triage today."


async def test_examples_are_embedded_again_only_for_an_agent_whose_examples_changed() -> None:
    triage, billing, _ = swarm()
    embedder = Counting(OfflineEmbedder())
    runner = Runner(triage, router=SemanticRouter(embedder))
    await runner.run_async("a", "refund my order please")
    billing.examples = (*BILLING, "cancel my subscription")
    await runner.run_async("b", "cancel my subscription")
    assert embedder.batches == [6, 1, 4, 1]


@pytest.fixture
def remote_tech() -> Iterator[str]:
    async def tech(ctx: TaskContext) -> AsyncIterator[str]:
        yield "Remote tech: reinstall the app."

    skills = [AgentSkill(id="support", name="support", description="Technical support.", examples=TECH)]
    with serve_app(create_app(HostedAgent("tech", tech, description="Technical support.", skills=skills))) as url:
        yield url


async def test_a_remote_agents_examples_come_from_its_card(remote_tech: str) -> None:
    triage = Agent("Triage", model=ScriptedModel([]))
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        runner = Runner(triage, gateway=gateway, router=SemanticRouter(OfflineEmbedder()))
        tech = await runner.register_remote(remote_tech)
        assert list(tech.examples) == TECH
        response = await runner.run_async("s", "the app crashes whenever I open it")
    assert (response.active_agent_name, response.content) == ("tech", "Remote tech: reinstall the app.")
    assert response.events_of("router_decision")[0].fields["candidate"] == "tech"


def _dense(text: str) -> list[float]:
    """A dense vector (every dimension set) carrying the offline embedding: what an embedding model returns."""
    sparse = OfflineEmbedder(dimensions=64).vector(text)
    return [x + 0.001 * ((i % 7) + 1) for i, x in enumerate(sparse)]


async def test_the_openai_compatible_embedder_routes_dense_vectors_and_embeds_the_examples_once() -> None:
    with openai_endpoint(embed=_dense) as endpoint:
        async with OpenAIEmbedder("text-embedding-3-small", base_url=endpoint.url, api_key="sk-e") as embedder:
            triage, _, _ = swarm()
            runner = Runner(triage, router=SemanticRouter(embedder, threshold=0.8))
            refund = await runner.run_async("a", "refund my order please")
            crash = await runner.run_async("b", "my app crashes as soon as I open it")
    assert (refund.active_agent_name, crash.active_agent_name) == ("Billing", "Tech")
    bodies = endpoint.bodies("/v1/embeddings")
    assert [len(b["input"]) for b in bodies] == [6, 1, 1]
    assert {b["model"] for b in bodies} == {"text-embedding-3-small"}
    assert endpoint.headers("/v1/embeddings")[0]["authorization"] == "Bearer sk-e"


def test_a_threshold_outside_the_cosine_range_is_refused() -> None:
    with pytest.raises(ValueError, match="cosine"):
        SemanticRouter(OfflineEmbedder(), threshold=1.5)
