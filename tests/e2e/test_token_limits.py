"""Limits per token across two gateway processes on one Redis: requests and spend on either replica count once.

Both replicas read ``[[security.tokens]]`` from the same configuration and count in the
stores' Redis (under the test's prefix), so a token over its rate or its spend cap on
one replica is refused on the other too. The swarm starts with a remote ``billing`` agent
on loopback that reports a cost on each answer, more than the cap in one turn.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from gateway.limits.counters import Period, Window
from tests.support.gateway_service import agent_server, billing_agent
from tests.support.redis import LocalRedis
from tests.support.replicas import Replica, replica_config, replicas

pytestmark = pytest.mark.xdist_group("replicas")

TOKENS = """
[swarm]
starting_agent = "billing"

[[agents]]
name = "billing"
url = "{billing_url}"

[[security.tokens]]
name = "alice"
token_env = "LIMITS_ALICE_TOKEN"
rate_per_minute = 3

[[security.tokens]]
name = "carol"
token_env = "LIMITS_CAROL_TOKEN"
max_spend_usd = 0.001
spend_window = "hour"
"""
ALICE = {"authorization": "Bearer alice-secret"}
CAROL = {"authorization": "Bearer carol-secret"}
ROOT = {"authorization": "Bearer root-secret"}


@pytest.fixture(scope="module")
def billing_url() -> Iterator[str]:
    with agent_server(billing_agent()) as url:
        yield url


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, redis_server: LocalRedis, billing_url: str
) -> Iterator[list[Replica]]:
    """Two replicas sharing one key prefix of the session's Redis, with tokens and their limits."""
    redis_url = f"{redis_server.url}/0?prefix=limits{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LIMITS_ALICE_TOKEN", "alice-secret")
        env.setenv("LIMITS_CAROL_TOKEN", "carol-secret")
        env.setenv("SWITCHBOARD_ADMIN_TOKEN", "root-secret")
        config = replica_config(redis_url, lease_s=1.0, agents=TOKENS.format(billing_url=billing_url))
        with replicas(tmp_path_factory.mktemp("limits"), config, 2) as started:
            yield started


def test_requests_spread_over_both_replicas_count_against_one_rate(pair: list[Replica]) -> None:
    a, b = (replica.client() for replica in pair)
    with a, b:
        for _ in range(2):  # once more if the minute turned between the first and the last request
            window = Period.now(Window.MINUTE)
            answers = [client.get("/sessions", headers=ALICE) for client in (a, b, a, b)]
            if Period.now(Window.MINUTE) == window:
                break
        assert [answer.status_code for answer in answers] == [200, 200, 200, 429], [a.text for a in answers]
        refused = answers[3]
        assert (
            "'alice' is over its rate limit of 3 requests a minute; it resets in" in refused.json()["error"]["message"]
        )
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert b.get("/sessions", headers=CAROL).status_code == 200, "carol has no rate limit"


def test_spend_on_one_replica_closes_the_other_to_new_turns(pair: list[Replica]) -> None:
    a, b = (replica.client() for replica in pair)
    with a, b:
        turn = {"message": "hello there", "stream": False}
        first = a.post("/sessions/carol-1/messages", json=turn, headers=CAROL)
        assert first.status_code == 200, first.text
        refused = b.post("/sessions/carol-2/messages", json=turn, headers=CAROL)
        assert refused.status_code == 429, refused.text
        message = refused.json()["error"]["message"]
        assert "'carol' has spent $" in message
        assert "of its cap of $0.001 per hour; new turns and tool calls are refused until it resets" in message
        assert 1 <= int(refused.headers["retry-after"]) <= 3600
        assert b.get("/runs", headers=CAROL).status_code == 200, "reading what was spent is still allowed"
        metrics = httpx.get(f"{pair[1].url}/metrics", headers=ROOT, timeout=30).text
        assert 'switchboard_token_refusals_total{limit="spend",token="carol"} 1.0' in metrics
