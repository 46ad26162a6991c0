"""The customer-support swarm of examples/support_swarm.py with the offline model, turn by turn,
and the streaming variant of the runner; and chatflow-agent's own support swarm, written in its
API, under a scripted model."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import orjson
import pytest

from examples.support_swarm import build_swarm
from gateway import Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.recording.events import Event


def _hops(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.fields["source"], e.fields["target"]) for e in events if e.type == "handoff"]


def _tools_called(events: list[Event]) -> list[str]:
    return [e.fields["tool"] for e in events if e.type == "tool_call"]


def test_triage_billing_tech_swarm_with_specialists_handing_back_to_triage() -> None:
    triage, _, _ = build_swarm()
    runner = Runner(triage)
    assert set(runner.agents) == {"Triage", "Billing", "Tech Support"}

    refund = runner.run(
        "c1", "I was charged twice, I want a refund for order ORD-1234", context_variables={"customer": "Ada"}
    )
    assert refund.active_agent_name == "Billing"
    assert _hops(refund.events) == [("Triage", "Billing")]
    assert _tools_called(refund.events) == ["transfer_to_billing", "issue_refund"]
    result = next(m for m in refund.messages if m.get("name") == "issue_refund")
    assert orjson.loads(result["content"]) == {"order_id": "ORD-1234", "refunded_usd": 120.0, "to": "Ada"}
    assert "120.0" in refund.content

    crash = runner.run("c1", "Also my app crashes with an error on start")
    assert _hops(crash.events) == [("Billing", "Triage"), ("Triage", "Tech Support")]
    assert _tools_called(crash.events) == ["transfer_to_triage", "transfer_to_tech_support", "lookup_kb_article"]
    assert crash.active_agent_name == "Tech Support"
    assert "KB-101" in crash.content

    package = runner.run("c1", "Where is my package ORD-1001?")
    assert _hops(package.events) == [("Tech Support", "Triage")]
    assert package.active_agent_name == "Triage"
    assert "ORD-1001 is in transit" in package.content
    assert package.context_variables == {"customer": "Ada"}


def test_each_turn_is_one_run_in_the_event_log_with_consecutive_seq() -> None:
    triage, _, _ = build_swarm()
    runner = Runner(triage)
    first = runner.run("c2", "refund for order ORD-1002 please")
    second = runner.run("c2", "my login fails with an error")
    assert first.run_id != second.run_id
    for response in (first, second):
        assert [e.seq for e in response.events] == list(range(len(response.events)))
        assert all(e.run_id == response.run_id for e in response.events)


@pytest.mark.anyio
async def test_streaming_yields_text_deltas_and_agent_changed_as_they_happen() -> None:
    triage, _, _ = build_swarm()
    runner = Runner(triage)
    events = [e async for e in runner.run_stream("c3", "I want a refund for order ORD-1234")]

    kinds = [e.type for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed"
    changed = next(e for e in events if e.type == "agent_changed")
    assert changed.fields["agent"] == "Billing"
    deltas = [e for e in events if e.type == "text_delta"]
    assert len(deltas) > 3
    assert all(e.fields["agent"] == "Billing" for e in deltas)
    assert events.index(changed) < events.index(deltas[0])
    assert kinds.index("handoff") < kinds.index("agent_changed")
    final = events[-1].fields
    assert "".join(e.fields["text"] for e in deltas) == final["content"]
    assert final["active_agent_name"] == "Billing"
    assert [e.seq for e in events] == list(range(len(events)))


@pytest.mark.anyio
async def test_leaving_a_stream_early_releases_the_session_for_the_next_turn() -> None:
    triage, _, _ = build_swarm()
    runner = Runner(triage)
    async with aclosing(runner.run_stream("c4", "I want a refund for order ORD-1234")) as stream:
        async for event in stream:
            if event.type == "agent_changed":
                break
    response = await runner.run_async("c4", "refund for order ORD-1002 please")
    assert response.events_of("run_started")[0].fields["agent"] == "Triage"
    runs = await runner.event_log.list_runs()
    first_run = runs[-1]
    assert (await runner.event_log.read(first_run))[-1].type == "run_failed"
    assert await runner.event_log.is_closed(first_run)


def test_the_support_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from examples import airline, support_swarm

    support_swarm.main()
    airline.main()
    out = capsys.readouterr().out
    assert "[Tech Support] via Triage -> Tech Support" in out
    assert "[Flight Change Agent] via Triage Agent -> Flight Modification Agent -> Flight Change Agent" in out


def _call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=f"call_{name}", name=name, arguments=arguments)])


def test_chatflow_agents_support_swarm_runs_as_written_and_routes_as_its_documents_describe() -> None:
    """Triage to billing (issue_refund), billing back to triage and on to tech (lookup_kb_article).

    tests/support/seeds/chatflow_support.py is chatflow-agent code; a ScriptedModel plays the model.
    """
    from tests.support.seeds import chatflow_support as seed

    script = ScriptedModel(
        [
            _call("transfer_to_billing", reason="refund request"),
            _call("issue_refund", order_id="ORD-1234", amount=30),
            ModelResponse(content="I refunded $30.00 on ORD-1234."),
            _call("transfer_to_triage", reason="technical problem"),
            _call("transfer_to_tech", reason="app crash"),
            _call("lookup_kb_article", topic="app crashes on start"),
            ModelResponse(content="Please follow KB-31."),
        ]
    )
    refund = seed.runner.run(
        session_id="c1", user_message="Refund order ORD-1234, I was charged $30 twice", model_override=script
    )
    assert (refund.active_agent_name, refund.content) == ("Billing", "I refunded $30.00 on ORD-1234.")
    assert _hops(refund.events) == [("Triage", "Billing")]
    results = {m["name"]: m["content"] for m in refund.messages if m["role"] == "tool"}
    assert orjson.loads(results["transfer_to_billing"]) == {
        "status": "HANDOFF_SUCCESS",
        "assistant": "Billing",
        "reason": "refund request",
    }
    assert results["issue_refund"] == "Refunded $30.00 on ORD-1234"

    crash = seed.runner.run(session_id="c1", user_message="My app crashes on start", model_override=script)
    assert _hops(crash.events) == [("Billing", "Triage"), ("Triage", "Tech")]
    assert _tools_called(crash.events) == ["transfer_to_triage", "transfer_to_tech", "lookup_kb_article"]
    assert (crash.active_agent_name, crash.content) == ("Tech", "Please follow KB-31.")

    offered = [[spec.name for spec in call.tools] for call in script.calls]
    assert offered[0] == ["transfer_to_billing", "transfer_to_tech"]
    assert offered[1] == ["issue_refund", "transfer_to_triage"]
    assert offered[5] == ["lookup_kb_article", "transfer_to_triage"]
    [billing_tool] = [spec for spec in script.calls[0].tools if spec.name == "transfer_to_billing"]
    assert billing_tool.description == (
        "Hand off the dialogue to 'Billing'. Target agent specialty: You handle refunds and invoices."
    )
    assert script.remaining == 0
