"""``GET /metrics`` after a scripted conversation: parsed with prometheus_client's parser, the counts checked.

The gateway and its agents run in this process (one metrics registry), so each count is
read as the difference between a scrape before and one after the conversation: one turn
that calls the streaming ``research`` tool and hands off twice (triage -> billing -> tech),
then a direct call of a tool whose budget is too small.
"""

from __future__ import annotations

from contextlib import ExitStack

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from agent_server import create_app
from examples.demo_agents import billing, researcher, tech
from gateway.config.load import validate_config
from gateway.service import create_gateway_app
from tests.support.servers import serve_app
from tests.support.telemetry import USAGE, triage_model_app

ADMIN = "metrics-admin-token"
MESSAGE = "I was charged twice and now the app crashes with E42; also research tidal energy"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def _delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> httpx.Client:
    monkeypatch.setenv("SWITCHBOARD_ADMIN_TOKEN", ADMIN)
    with ExitStack() as stack:
        urls = {agent.name: stack.enter_context(serve_app(create_app(agent))) for agent in (researcher, billing, tech)}
        model = stack.enter_context(serve_app(triage_model_app()))
        config = validate_config(
            {
                "stores": {"sessions": "memory", "events": "memory", "tasks": "memory"},
                "agents": [
                    {
                        "name": "triage",
                        "model": "openai:fake-model",
                        "base_url": f"{model}/v1",
                        "price_per_1k_tokens": [1.0, 2.0],
                        "handoffs": ["billing"],
                        "tools": ["research"],
                    },
                    {"name": "billing", "url": urls["billing"]},
                    {"name": "tech", "url": urls["tech"]},
                ],
                "tools": [
                    {"name": "research", "agent": urls["researcher"], "mode": "streaming"},
                    {"name": "cheap_research", "agent": urls["researcher"], "mode": "streaming", "max_cost_usd": 0.001},
                ],
            }
        )
        url = stack.enter_context(serve_app(create_gateway_app(config)))
        client = stack.enter_context(httpx.Client(base_url=url, timeout=60.0))
        client.headers["authorization"] = f"Bearer {ADMIN}"
        yield client


def test_metrics_count_runs_handoffs_hops_tokens_and_tool_outcomes(gateway: httpx.Client) -> None:
    assert httpx.get(f"{gateway.base_url}/metrics").status_code == 401, "metrics are behind the admin token"
    before = _scrape(gateway)
    turn = gateway.post("/sessions/m1/messages", json={"message": MESSAGE, "stream": True})
    assert turn.status_code == 200 and '"run_completed"' in turn.text.splitlines()[-1]
    over_budget = gateway.post("/tools/cheap_research/call", json={"input": "tidal energy"})
    assert over_budget.status_code == 502, over_budget.text
    after = _scrape(gateway)

    def delta(name: str, **labels: str) -> float:
        return _delta(before, after, name, **labels)

    assert delta("switchboard_runs_total", kind="turn", outcome="completed") == 1
    assert delta("switchboard_runs_total", kind="tool", outcome="failed") == 1
    assert delta("switchboard_run_duration_seconds_count", kind="turn", outcome="completed") == 1

    assert delta("switchboard_handoffs_total", source="triage", target="billing", outcome="accepted") == 1
    assert delta("switchboard_handoffs_total", source="billing", target="tech", outcome="accepted") == 1
    assert delta("switchboard_handoffs_resolved_total", target="tech") == 1
    assert after[("switchboard_handoff_efficiency", frozenset())] > 0

    assert delta("switchboard_hops_per_turn_count") == 1
    assert delta("switchboard_hops_per_turn_sum") == 2
    assert delta("switchboard_hops_per_turn_bucket", le="1.0") == 0
    assert delta("switchboard_hops_per_turn_bucket", le="2.0") == 1

    tokens = {"agent": "triage", "model": "fake-model"}
    calls = [USAGE["research"], USAGE["transfer_to_billing"]]
    assert delta("switchboard_model_calls_total", **tokens) == 2
    assert delta("switchboard_tokens_total", **tokens, kind="input") == sum(u["prompt_tokens"] for u in calls)
    assert delta("switchboard_tokens_total", **tokens, kind="output") == sum(u["completion_tokens"] for u in calls)
    price = (
        sum(u["prompt_tokens"] for u in calls) / 1000 * 1.0 + sum(u["completion_tokens"] for u in calls) / 1000 * 2.0
    )
    assert delta("switchboard_cost_usd_total", **tokens) == pytest.approx(price), "the configured price"
    assert delta("switchboard_cost_usd_total", agent="tech", model="(remote)") == pytest.approx(0.001)
    # an agent tool's spend is in the total too, the budget's cut included (its last chunk went past 0.001)
    assert delta("switchboard_cost_usd_total", agent="research", model="(agent tool)") > 0
    assert delta("switchboard_cost_usd_total", agent="cheap_research", model="(agent tool)") > 0.001

    assert delta("switchboard_agent_tool_calls_total", tool="research", mode="streaming", outcome="completed") == 1
    assert (
        delta("switchboard_agent_tool_calls_total", tool="cheap_research", mode="streaming", outcome="budget_exceeded")
        == 1
    )
    assert (
        delta("switchboard_agent_tool_duration_seconds_count", tool="research", mode="streaming", outcome="completed")
        == 1
    )
    assert delta("switchboard_agent_server_tasks_total", agent="tech", state="completed") == 1
    assert delta("switchboard_event_append_seconds_count") > 10
    route = {"route": "/sessions/{session_id}/messages", "method": "POST"}
    assert delta("switchboard_http_requests_total", **route, status="200") == 1
    for side in ("server", "client"):
        assert after[("switchboard_open_streams", frozenset({("side", side)}))] == 0, f"no {side} stream left open"
