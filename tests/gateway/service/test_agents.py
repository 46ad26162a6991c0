"""Agents added and removed at run time, and the service's refusals at shutdown (in process, servers on loopback)."""

from __future__ import annotations

import anyio
import pytest

from agent_server import HostedAgent, TaskContext
from gateway.config.load import validate_config
from gateway.service import ShuttingDown, create_gateway_app
from tests.support.gateway_service import (
    agent_server,
    billing_agent,
    client,
    error_of,
    lines_of,
    remote_first_service,
)


def _ending(lines: list[dict[str, object]]) -> dict[str, object]:
    assert lines and lines[-1]["type"] == "run_completed", lines
    return lines[-1]


def test_a_removed_agent_stays_gone_its_sessions_go_back_to_the_start_and_it_can_come_back(
    triage_gateway_url: str,
) -> None:
    with agent_server(billing_agent()) as billing_url, client(triage_gateway_url) as http:
        assert http.post("/agents", json={"url": billing_url}).status_code == 201
        first = lines_of(http.post("/sessions/s1/messages", json={"message": "I want a refund for a double charge"}))
        assert [(e["source"], e["target"]) for e in first if e["type"] == "handoff"] == [("triage", "billing")]
        assert _ending(first)["active_agent_name"] == "billing"

        removed = http.delete("/agents/billing")
        assert removed.status_code == 200, removed.text
        after = lines_of(http.post("/sessions/s1/messages", json={"message": "hello again"}))
        assert _ending(after)["active_agent_name"] == "triage"
        assert not any(e["type"] == "handoff" for e in after)
        assert "billing" not in [a["name"] for a in http.get("/agents").json()["agents"]]
        assert http.get("/agents/billing").status_code == 404
        again = http.delete("/agents/billing")
        assert again.status_code == 404, again.text

        assert http.post("/agents", json={"url": billing_url}).status_code == 201
        assert "billing" in [a["name"] for a in http.get("/agents").json()["agents"]]


def test_one_url_is_registered_once_a_second_name_for_it_is_refused(triage_gateway_url: str) -> None:
    with agent_server(billing_agent()) as billing_url, client(triage_gateway_url) as http:
        assert http.post("/agents", json={"url": billing_url}).status_code == 201
        again = http.post("/agents", json={"url": billing_url + "/", "name": "billing2"})
        assert again.status_code == 409, again.text
        assert error_of(again)["message"] == (
            f"the agent at {billing_url}/ is already registered as 'billing'; remove it first to register it anew"
        )
        assert "billing2" not in [a["name"] for a in http.get("/agents").json()["agents"]]


def test_removing_a_local_agent_says_how_it_was_added(triage_gateway_url: str) -> None:
    with client(triage_gateway_url) as http:
        refused = http.delete("/agents/triage")
    assert refused.status_code == 409
    message = error_of(refused)["message"]
    assert "is a local agent" in message and "defined by the configuration, not registered" not in message


def test_a_card_name_that_cannot_be_a_path_segment_is_refused_with_a_hint(triage_gateway_url: str) -> None:
    async def answer(ctx: TaskContext) -> str:
        return "ok"

    with (
        agent_server(HostedAgent("EU/billing", answer)) as agent_url,
        client(triage_gateway_url) as http,
    ):
        refused = http.post("/agents", json={"url": agent_url})
        assert refused.status_code == 400
        error = error_of(refused)
        assert "'EU/billing'" in error["message"] and 'pass "name"' in error["message"]
        assert http.get("/agents").json()["agents"][-1]["name"] == "triage"
        named = http.post("/agents", json={"url": agent_url, "name": "eu_billing"})
        assert named.status_code == 201
        assert http.get("/agents/eu_billing").status_code == 200
        assert http.delete("/agents/eu_billing").status_code == 200


@pytest.mark.anyio
async def test_a_turn_queued_behind_a_running_one_is_refused_with_shutting_down_at_shutdown(scripted_url: str) -> None:
    async with remote_first_service(scripted_url) as service:
        await service.start_turn("s", "stream 100 0.05")
        outcome: list[BaseException] = []

        async def queued() -> None:
            try:
                await service.start_turn("s", "stream 1 0")
            except Exception as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(queued)
            await anyio.wait_all_tasks_blocked()  # nothing stands before the session's lock: the turn waits there
            with anyio.fail_after(10):
                await service.stop_runs()
    assert len(outcome) == 1 and isinstance(outcome[0], ShuttingDown), outcome
    assert outcome[0].status == 503


def test_binding_settings_cannot_be_given_with_a_configuration() -> None:
    config = validate_config({"stores": {"sessions": "memory", "events": "memory"}})
    for option in ({"task_store": "memory"}, {"max_body_bytes": 10}, {"public_url": "http://x"}):
        with pytest.raises(TypeError, match="cannot be given with a configuration"):
            create_gateway_app(config, **option)  # type: ignore[arg-type]
