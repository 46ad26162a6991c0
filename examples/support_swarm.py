"""A customer-support swarm: triage routes to billing or tech support, who hand back to triage.

    python -m examples.support_swarm

Runs with the offline model (no key, no network). Each line shows who answered and the
handoffs of the turn; the session keeps the agent that holds the conversation.
"""

from __future__ import annotations

from typing import Any

from gateway import Agent, Runner, tool

ORDERS: dict[str, float] = {"ORD-1001": 59.90, "ORD-1002": 12.50, "ORD-1234": 120.00}
KB: dict[str, str] = {
    "crash": "KB-101: the app crashes on start: update to 4.2 and clear the cache.",
    "login": "KB-102: cannot log in: reset the password from the sign-in page.",
    "error": "KB-103: error 500: the service was down; retry in a few minutes.",
}


@tool
def issue_refund(order_id: str, context_variables: dict[str, Any]) -> dict[str, Any]:
    """Issue a refund for a charge on an order: money back to the customer.

    Args:
        order_id: The order to refund, like ORD-1234.
    """
    amount = ORDERS.get(order_id.upper())
    if amount is None:
        return {"error": f"no order {order_id}"}
    customer = context_variables.get("customer", "the customer")
    return {"order_id": order_id.upper(), "refunded_usd": amount, "to": customer}


@tool
def lookup_kb_article(query: str) -> str:
    """Look up the knowledge-base article for a technical problem: crash, error, login, bug.

    Args:
        query: The problem as the customer describes it.
    """
    words = query.lower()
    hits = [article for key, article in KB.items() if key in words]
    return " ".join(hits) or "No article matches; escalate to an engineer."


@tool
def track_package(order_id: str) -> str:
    """Tell where a package is: shipped, in transit or delivered.

    Args:
        order_id: The order, like ORD-1001.
    """
    return f"{order_id.upper()} is in transit, due in 2 days." if order_id.upper() in ORDERS else f"no order {order_id}"


def build_swarm() -> tuple[Agent, Agent, Agent]:
    """Triage, billing and tech support, wired both ways."""
    triage = Agent(
        "Triage",
        "You are the front desk of Acme support. Find out what the customer needs and transfer them to the right "
        "specialist.",
        description="Front desk: routes every request to the right specialist (technical problems such as "
        "crashes and errors, billing) and tracks packages itself.",
        tools=[track_package],
    )
    billing = Agent(
        "Billing",
        "You are the billing specialist: refunds, charges, invoices and payments. Use issue_refund for refunds.",
        tools=[issue_refund],
    )
    tech = Agent(
        "Tech Support",
        "You are technical support: crashes, errors, bugs and login problems. Look answers up with lookup_kb_article.",
        tools=[lookup_kb_article],
    )
    triage.add_handoff(billing)
    triage.add_handoff(tech)
    billing.add_handoff(triage)
    tech.add_handoff(triage)
    return triage, billing, tech


CONVERSATION = [
    "Hi, I was charged twice, I want a refund for order ORD-1234",
    "Also my app crashes with an error on start",
    "Where is my package ORD-1001?",
]


def main() -> None:
    triage, _, _ = build_swarm()
    runner = Runner(triage)
    for text in CONVERSATION:
        response = runner.run("demo", text, context_variables={"customer": "Ada"})
        hops = " -> ".join(e.fields["target"] for e in response.events if e.type == "handoff")
        print(f"user: {text}")
        print(f"  [{response.active_agent_name}]{' via ' + hops if hops else ''}: {response.content}")


if __name__ == "__main__":
    main()
