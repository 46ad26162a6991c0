"""The airline swarm of examples/airline.py (triage, flight modification, cancel, change, lost
baggage) with customer and flight context variables, under the offline model."""

from __future__ import annotations

import pytest

from examples.airline import CUSTOMER, FLIGHT, build_swarm, context_variables
from gateway import Runner
from gateway.events import Event


def _hops(events: list[Event]) -> list[str]:
    return [e.fields["target"] for e in events if e.type == "handoff"]


def test_instructions_are_rendered_from_customer_and_flight_context() -> None:
    agents = build_swarm()
    rendered = agents["cancel"].get_instructions(context_variables())
    assert CUSTOMER in rendered and FLIGHT in rendered
    assert agents["cancel"].get_instructions({}).startswith("You are the flight cancellation agent")


def test_airline_swarm_routes_through_modification_and_back_through_triage() -> None:
    agents = build_swarm()
    runner = Runner(agents["triage"])
    assert len(runner.agents) == 5

    cancel = runner.run("pnr-1", "I want to cancel my flight and get a refund", context_variables=context_variables())
    assert _hops(cancel.events) == ["Flight Modification Agent", "Flight Cancel Agent"]
    assert cancel.active_agent_name == "Flight Cancel Agent"
    assert "ABC123 cancelled; refund of $329" in cancel.content
    assert cancel.context_variables["flight_context"] == "Cancelled."
    assert cancel.context_variables["customer_context"] == CUSTOMER

    baggage = runner.run("pnr-1", "My suitcase is lost, it never arrived")
    assert _hops(baggage.events) == ["Triage Agent", "Lost Baggage Agent"]
    assert "BAG-7781" in baggage.content

    change = runner.run("pnr-1", "Please change my flight date to next friday")
    assert _hops(change.events) == ["Triage Agent", "Flight Modification Agent", "Flight Change Agent"]
    assert change.active_agent_name == "Flight Change Agent"
    assert "moved to" in change.context_variables["flight_context"]
    assert change.context_variables["booking_ref"] == "ABC123"


@pytest.mark.anyio
async def test_context_variables_reach_tools_but_not_the_models_schema() -> None:
    agents = build_swarm()
    tools = {t.name: t for t in agents["cancel"].get_all_tools()}
    assert "context_variables" not in tools["initiate_refund"].spec.parameters.get("properties", {})
    result = await tools["initiate_refund"].invoke({}, {"booking_ref": "XYZ9"})
    assert result.value == "Booking XYZ9 cancelled; refund of $329 issued."
