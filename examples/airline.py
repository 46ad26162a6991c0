"""An airline customer-service swarm, after OpenAI's swarm example: triage, flight modification
(which routes to cancel or change), and lost baggage, with customer and flight context.

    python -m examples.airline

Instructions are functions of the context variables, tools read them (a hidden
``context_variables`` parameter) and update them (``ToolResult``). Offline model, no key.
"""

from __future__ import annotations

from typing import Any

from gateway import Agent, Runner, ToolResult, tool

CUSTOMER = "Customer: Amelia Earhart, frequent flyer #FF-1897, amelia@example.com."
FLIGHT = "Flight 1919 from LGA to LAX on 2025-05-20 at 10:00, seat 12A, booking ref ABC123."


def context_variables() -> dict[str, Any]:
    return {"customer_context": CUSTOMER, "flight_context": FLIGHT, "booking_ref": "ABC123"}


def _with_context(role: str) -> Any:
    def instructions(context_variables: dict[str, Any]) -> str:
        return (
            f"You are {role}. "
            f"{context_variables.get('customer_context', '')} {context_variables.get('flight_context', '')}"
        )

    instructions.__doc__ = role
    return instructions


@tool
def initiate_refund(context_variables: dict[str, Any]) -> ToolResult:
    """Cancel the booking and refund the ticket price to the original card."""
    ref = context_variables.get("booking_ref", "?")
    return ToolResult(
        value=f"Booking {ref} cancelled; refund of $329 issued.", context_variables={"flight_context": "Cancelled."}
    )


@tool
def initiate_flight_credits(context_variables: dict[str, Any]) -> ToolResult:
    """Cancel the booking and give flight credits (a voucher) instead of money."""
    ref = context_variables.get("booking_ref", "?")
    return ToolResult(
        value=f"Booking {ref} cancelled; $350 in flight credits issued.",
        context_variables={"flight_context": "Cancelled."},
    )


@tool
def change_flight(new_date: str, context_variables: dict[str, Any]) -> ToolResult:
    """Move the booking to another date or time.

    Args:
        new_date: The date the customer wants to fly instead, in the customer's words.
    """
    flight = f"Flight 1919 from LGA to LAX, moved to: {new_date}, booking ref {context_variables.get('booking_ref')}."
    return ToolResult(value=f"Changed: {flight}", context_variables={"flight_context": flight})


@tool
def initiate_baggage_search(context_variables: dict[str, Any]) -> str:
    """Start a search for lost or delayed baggage, a missing suitcase or luggage."""
    return f"Baggage search opened for booking {context_variables.get('booking_ref')}: case BAG-7781."


def build_swarm() -> dict[str, Agent]:
    """The five agents, by role; every specialist can hand the customer back to triage."""
    triage = Agent(
        "Triage Agent",
        _with_context("the airline's triage agent; transfer the customer to the right department"),
        description="Routes every request: flight changes or cancellations, lost baggage, anything else.",
    )
    modification = Agent(
        "Flight Modification Agent",
        _with_context("the flight modification agent; decide whether the customer cancels or changes the flight"),
        description="Any modification of a booked flight: cancel it or change its date.",
    )
    cancel = Agent(
        "Flight Cancel Agent",
        _with_context("the flight cancellation agent; cancel the booking with a refund or flight credits"),
        description="Cancels a flight booking: refund or flight credits.",
        tools=[initiate_refund, initiate_flight_credits],
    )
    change = Agent(
        "Flight Change Agent",
        _with_context("the flight change agent; move the booking to the date the customer asks for"),
        description="Changes a booked flight to another date or time.",
        tools=[change_flight],
    )
    baggage = Agent(
        "Lost Baggage Agent",
        _with_context("the lost baggage agent; open a search for the missing bags"),
        description="Lost, delayed or damaged baggage, suitcases, luggage.",
        tools=[initiate_baggage_search],
    )
    triage.add_handoff(modification)
    triage.add_handoff(baggage)
    modification.add_handoff(cancel)
    modification.add_handoff(change)
    for specialist in (modification, cancel, change, baggage):
        specialist.add_handoff(triage)
    return {"triage": triage, "modification": modification, "cancel": cancel, "change": change, "baggage": baggage}


CONVERSATION = [
    "I want to cancel my flight and get a refund",
    "My suitcase is lost, it never arrived",
    "Please change my flight date to next friday",
]


def main() -> None:
    agents = build_swarm()
    runner = Runner(agents["triage"])
    for number, text in enumerate(CONVERSATION):
        extra = context_variables() if number == 0 else None
        response = runner.run("flight-1919", text, context_variables=extra)
        hops = " -> ".join(e.fields["target"] for e in response.events if e.type == "handoff")
        print(f"user: {text}")
        print(f"  [{response.active_agent_name}]{' via ' + hops if hops else ''}: {response.content}")
    print(f"flight context now: {response.context_variables['flight_context']}")


if __name__ == "__main__":
    main()
