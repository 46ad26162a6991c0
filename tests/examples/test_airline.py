"""The airline swarm of examples/airline.py (triage, flight modification, cancel, change, lost
baggage) with customer and flight context variables, under the offline model; and OpenAI swarm's
own airline example, written in swarm's API, under a scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from examples.airline import CUSTOMER, FLIGHT, build_swarm, context_variables
from gateway import Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.recording.events import Event


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


def _call(name: str, **arguments: Any) -> ModelResponse:
    return ModelResponse(tool_calls=[ToolCall(id=f"call_{name}", name=name, arguments=arguments)])


def _offered(call: Any) -> list[str]:
    return [spec.name for spec in call.tools]


def test_swarms_own_airline_example_runs_as_written_and_routes_as_its_documents_describe() -> None:
    """The example's triage and flight-modification evaluations, its policies' steps, its transfers back to triage.

    tests/support/seeds/swarm_airline.py is swarm code (functions returning agents, nothing registered,
    ``functions=``, ``parallel_tool_calls=False``); a ScriptedModel plays the model.
    """
    from tests.support.seeds import swarm_airline as seed

    script = ScriptedModel(
        [
            _call("transfer_to_lost_baggage"),  # triage eval: "My bag was not delivered!"
            _call("initiate_baggage_search"),
            _call("case_resolved"),
            ModelResponse(content="Your bag was found; it will be delivered to you."),
            _call("transfer_to_triage"),  # not the baggage policy any more
            _call("transfer_to_flight_modification"),  # triage eval: "I want to cancel my flight please"
            _call("transfer_to_flight_cancel"),  # flight modification eval
            _call("initiate_refund"),
            ModelResponse(content="Your refund is on its way, within 3-5 business days."),
            _call("escalate_to_agent", reason="the customer asks for a supervisor"),
            ModelResponse(content="A supervisor will contact you."),
            _call("transfer_to_triage"),
            _call("transfer_to_flight_modification"),
            _call("transfer_to_flight_change"),  # flight modification eval: "I want to change my flight ..."
            _call("valid_to_change_flight"),
            _call("change_flight"),
            ModelResponse(content="You now fly one day earlier."),
            _call("transfer_to_triage"),
            ModelResponse(content="I am sorry about the turbulence."),  # triage eval: no function
        ]
    )
    runner = Runner(seed.triage_agent)
    assert set(runner.agents) == {"Triage Agent"}

    def turn(text: str, context: dict[str, Any] | None = None) -> Any:
        return runner.run("pnr-1919", text, context_variables=context, model_override=script)

    bag = turn("My bag was not delivered!", seed.context_variables)
    assert _hops(bag.events) == ["Lost baggage traversal"]
    assert bag.active_agent_name == "Lost baggage traversal"
    results = {m["name"]: m["content"] for m in bag.messages if m["role"] == "tool"}
    assert results["initiate_baggage_search"] == "The baggage was found"
    assert results["case_resolved"] == "Case resolved; no further questions."

    cancel = turn("I want to cancel my flight please")
    assert _hops(cancel.events) == ["Triage Agent", "Flight Modification Agent", "Flight cancel traversal"]
    assert "Refund started" in [m["content"] for m in cancel.messages if m["role"] == "tool"]

    supervisor = turn("I want to talk to a supervisor")
    assert _hops(supervisor.events) == []
    assert supervisor.content == "A supervisor will contact you."
    escalated = [m["content"] for m in supervisor.messages if m["role"] == "tool"]
    assert escalated == ["Escalating to a human agent: the customer asks for a supervisor"]

    change = turn("I want to change my flight to one day earlier!")
    assert _hops(change.events) == ["Triage Agent", "Flight Modification Agent", "Flight change traversal"]
    assert change.content == "You now fly one day earlier."

    turbulence = turn("I had some turbulence on my flight")
    assert (turbulence.active_agent_name, turbulence.content) == ("Triage Agent", "I am sorry about the turbulence.")
    assert set(runner.agents) == {
        "Triage Agent",
        "Flight Modification Agent",
        "Flight cancel traversal",
        "Flight change traversal",
        "Lost baggage traversal",
    }

    calls = script.calls
    assert _offered(calls[0]) == ["transfer_to_flight_modification", "transfer_to_lost_baggage"]
    assert seed.context_variables["flight_context"] in calls[0].messages[0]["content"]
    assert _offered(calls[1]) == ["escalate_to_agent", "initiate_baggage_search", "transfer_to_triage", "case_resolved"]
    modification = calls[6]
    assert _offered(modification) == ["transfer_to_flight_cancel", "transfer_to_flight_change"]
    assert modification.settings.parallel_tool_calls is False and calls[0].settings.parallel_tool_calls is True
    assert script.remaining == 0
