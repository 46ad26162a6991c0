"""OpenAI swarm's airline customer-service example, as swarm code: functions that return an Agent
transfer the conversation, instructions read the customer and flight context, and the flight
modification agent asks for one tool call at a time. The agents, functions and context
variables are the example's; the wording of the instructions and results is ours. With swarm
the import line reads ``from swarm import Agent``: it is the only line that names Switchboard.
"""

from gateway import Agent


def escalate_to_agent(reason=None):
    return f"Escalating to a human agent: {reason}" if reason else "Escalating to a human agent"


def valid_to_change_flight():
    return "The customer may change this flight"


def change_flight():
    return "The flight was changed"


def initiate_refund():
    return "Refund started"


def initiate_flight_credits():
    return "Flight credits issued"


def case_resolved():
    return "Case resolved; no further questions."


def initiate_baggage_search():
    return "The baggage was found"


def transfer_to_flight_modification():
    return flight_modification


def transfer_to_flight_cancel():
    return flight_cancel


def transfer_to_flight_change():
    return flight_change


def transfer_to_lost_baggage():
    return lost_baggage


def transfer_to_triage():
    """Call this when the customer asks about something the current agent does not handle."""
    return triage_agent


def triage_instructions(context_variables):
    return (
        "Find out which topic the customer's request is about and transfer them to the agent for it; ask one "
        "short question when the topic is unclear.\n"
        f"Customer: {context_variables['customer_context']}\nFlight: {context_variables['flight_context']}"
    )


POLICY_PREAMBLE = (
    "You serve the customers of an airline. Follow the policy below step by step; when the request no longer "
    "fits it, call transfer_to_triage; when the customer asks for a person, call escalate_to_agent.\n"
)
CANCELLATION_POLICY = "Confirm the flight, ask whether they want a refund or credits, start it, then resolve the case."
CHANGE_POLICY = "Check the flight may be changed, offer the new flight, change it, then resolve the case."
BAGGAGE_POLICY = "Start a baggage search; when the bag is found arrange delivery, then resolve the case."

triage_agent = Agent(
    name="Triage Agent",
    instructions=triage_instructions,
    functions=[transfer_to_flight_modification, transfer_to_lost_baggage],
)

flight_modification = Agent(
    name="Flight Modification Agent",
    instructions="You decide whether the customer wants to cancel their flight or change it, then transfer them.",
    functions=[transfer_to_flight_cancel, transfer_to_flight_change],
    parallel_tool_calls=False,
)

flight_cancel = Agent(
    name="Flight cancel traversal",
    instructions=POLICY_PREAMBLE + CANCELLATION_POLICY,
    functions=[escalate_to_agent, initiate_refund, initiate_flight_credits, transfer_to_triage, case_resolved],
)

flight_change = Agent(
    name="Flight change traversal",
    instructions=POLICY_PREAMBLE + CHANGE_POLICY,
    functions=[escalate_to_agent, change_flight, valid_to_change_flight, transfer_to_triage, case_resolved],
)

lost_baggage = Agent(
    name="Lost baggage traversal",
    instructions=POLICY_PREAMBLE + BAGGAGE_POLICY,
    functions=[escalate_to_agent, initiate_baggage_search, transfer_to_triage, case_resolved],
)

context_variables = {
    "customer_context": "Customer 4711, Ada Lovelace, ada@example.com, premium status.",
    "flight_context": "Flight 1919 from LGA to LAX, departing 3 pm on May 21.",
}
