"""Tokens and cost: every model call recorded, the totals per agent in ``run_completed``, ``GET /runs/{id}``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from gateway import Agent, Runner
from gateway.config.load import validate_config
from gateway.errors import ConfigError
from gateway.models import ModelResponse, ScriptedModel, TokenUsage, ToolCall
from gateway.service import create_gateway_app
from tests.support.servers import serve_app


@pytest.mark.anyio
async def test_run_completed_carries_each_agents_tokens_and_cost() -> None:
    billing = Agent(
        "billing",
        model=ScriptedModel([ModelResponse("Refunded.", usage=TokenUsage(20, 4), cost_usd=0.02)]),
    )
    transfer = ToolCall("c1", "transfer_to_billing", {"reason": "refund"})
    triage = Agent(
        "triage",
        model=ScriptedModel([ModelResponse(tool_calls=[transfer], usage=TokenUsage(10, 2), cost_usd=0.01)]),
        handoffs=[billing],
    )
    response = await Runner(triage).run_async("s1", "refund please")

    calls = response.events_of("model_call")
    assert [(e.fields["agent"], e.fields["prompt_tokens"], e.fields["completion_tokens"]) for e in calls] == [
        ("triage", 10, 2),
        ("billing", 20, 4),
    ]
    assert [e.fields["cost_usd"] for e in calls] == [0.01, 0.02]
    assert all(e.fields["system"] == "scripted" and e.fields["duration_ms"] >= 0 for e in calls)
    (completed,) = response.events_of("run_completed")
    assert completed.fields["usage_by_agent"] == {
        "triage": {"prompt_tokens": 10, "completion_tokens": 2, "model_calls": 1, "cost_usd": 0.01},
        "billing": {"prompt_tokens": 20, "completion_tokens": 4, "model_calls": 1, "cost_usd": 0.02},
    }


@pytest.mark.anyio
async def test_a_model_that_reports_no_usage_is_recorded_without_tokens() -> None:
    response = await Runner(Agent("a", model=ScriptedModel([ModelResponse("hi")]))).run_async("s", "hello")
    (call,) = response.events_of("model_call")
    assert "prompt_tokens" not in call.fields and call.fields["cost_usd"] == 0.0
    (completed,) = response.events_of("run_completed")
    assert completed.fields["usage_by_agent"]["a"]["prompt_tokens"] == 0


@pytest.mark.parametrize(
    ("agent", "problem"),
    [
        ({"name": "a", "price_per_1k_tokens": [0.15, -1]}, "each >= 0"),
        ({"name": "a", "price_per_1k_tokens": [0.15]}, "price_per_1k_tokens"),
        ({"name": "a", "url": "http://127.0.0.1:9", "price_per_1k_tokens": [1, 1]}, "price_per_1k_tokens"),
    ],
)
def test_a_price_is_two_dollar_amounts_of_a_local_agent(agent: dict[str, object], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        validate_config({"agents": [agent]})


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ALICE_TOKEN", "alice-token")
    monkeypatch.setenv("BOB_TOKEN", "bob-token")
    config = validate_config(
        {
            "stores": {"sessions": "memory", "events": "memory", "tasks": "memory"},
            "security": {
                "tokens": [{"name": "alice", "token_env": "ALICE_TOKEN"}, {"name": "bob", "token_env": "BOB_TOKEN"}]
            },
            "agents": [
                {"name": "triage", "handoffs": ["billing"]},
                {"name": "billing", "description": "Billing: refunds and double charges."},
            ],
        }
    )
    with serve_app(create_gateway_app(config)) as url:
        yield url


def test_get_run_gives_agents_hops_tools_tokens_cost_and_duration(gateway: str) -> None:
    alice = httpx.Client(base_url=gateway, headers={"authorization": "Bearer alice-token"}, timeout=30.0)
    bob = httpx.Client(base_url=gateway, headers={"authorization": "Bearer bob-token"}, timeout=30.0)
    with alice, bob:
        turn = alice.post("/sessions/u1/messages", json={"message": "Please refund my double charge"})
        assert turn.status_code == 200, turn.text
        run_id = turn.headers["x-run-id"]
        summary = alice.get(f"/runs/{run_id}").json()
        events = [httpx.Response(200, content=line).json() for line in alice.get(f"/runs/{run_id}/events").iter_lines()]
        assert bob.get(f"/runs/{run_id}").status_code == 404, "another caller's run does not exist for them"
        assert alice.get("/runs/run_nosuchrun").status_code == 404

    calls = [e for e in events if e["type"] == "model_call"]
    assert summary["state"] == "completed" and summary["session_id"] == "u1"
    assert summary["agents"] == ["triage", "billing"]
    assert summary["hops"] == 1 and summary["handoffs"][0]["target"] == "billing"
    assert [t["tool"] for t in summary["tool_calls"]] == ["transfer_to_billing"]
    assert summary["prompt_tokens"] == sum(c["prompt_tokens"] for c in calls) > 0
    assert summary["completion_tokens"] == sum(c["completion_tokens"] for c in calls) > 0
    assert set(summary["usage_by_agent"]) == {"triage", "billing"}
    assert summary["usage_by_agent"] == events[-1]["usage_by_agent"], "the same totals as run_completed"
    assert summary["cost_usd"] == 0.0
    assert summary["duration_ms"] == events[-1]["timestamp_ms"] - events[0]["timestamp_ms"] >= 0
