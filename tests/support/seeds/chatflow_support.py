"""chatflow-agent's customer-support swarm, as its documentation writes it: a triage agent, billing
with ``issue_refund``, tech support with ``lookup_kb_article``, each specialist handing back to
triage with ``add_handoff``, sessions kept by a Runner. The import line is the only one that
names Switchboard; the tools' data is ours.
"""

from gateway import Agent, Runner, tool


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount on an order to the customer's card.

    Args:
        order_id: The order, like ORD-1234.
        amount: How much to refund, in dollars.
    """
    return f"Refunded ${amount:.2f} on {order_id}"


@tool
def lookup_kb_article(topic: str) -> str:
    """Find the knowledge-base article about a technical problem.

    Args:
        topic: The problem in a few words.
    """
    return f"KB-{len(topic) % 90 + 10}: how to fix '{topic}'"


triage = Agent("Triage", "You route customers to billing or technical support.")
billing = Agent("Billing", "You handle refunds and invoices.", tools=[issue_refund])
tech = Agent("Tech", "You solve technical problems with the knowledge base.", tools=[lookup_kb_article])
triage.add_handoff(billing)
triage.add_handoff(tech)
billing.add_handoff(triage)
tech.add_handoff(triage)

runner = Runner(triage)
