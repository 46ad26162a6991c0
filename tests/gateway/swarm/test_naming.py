"""Transfer tools as an agent shows them: names, description, signature, what calling one returns."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys

import pytest

from gateway import Agent, Handoff, tool
from gateway.swarm import TransferTool


def _transfer_names(agent: Agent) -> list[str]:
    return [t.name for t in agent.get_all_tools() if isinstance(t, TransferTool)]


def _router(*targets: Agent) -> Agent:
    return Agent("Router", handoffs=list(targets))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("BillingSpecialist", "transfer_to_billingspecialist"),
        ("AtenciónAlCliente", "transfer_to_atencionalcliente"),
        ("Tech Support", "transfer_to_tech_support"),
        ("  Ünïcödé -- Agent!! ", "transfer_to_unicode_agent"),
    ],
)
def test_latin_names_fold_to_ascii(name: str, expected: str) -> None:
    assert _transfer_names(_router(Agent(name))) == [expected]


@pytest.mark.parametrize("name", ["請求担当", "الفواتير", "Биллинг", "💳🧾"])
def test_names_with_nothing_ascii_become_u_and_sha256_hex(name: str) -> None:
    [tool_name] = _transfer_names(_router(Agent(name)))
    assert re.fullmatch(r"transfer_to_u[0-9a-f]{12}", tool_name)
    assert tool_name == "transfer_to_u" + hashlib.sha256(name.encode()).hexdigest()[:12]


def test_different_scripts_get_different_names() -> None:
    names = _transfer_names(_router(Agent("請求担当"), Agent("الفواتير"), Agent("Биллинг"), Agent("💳")))
    assert len(set(names)) == 4


def test_names_that_sanitize_alike_get_numbered_suffixes_in_order() -> None:
    agent = _router(Agent("Billing"), Agent("billing"), Agent("BILLING!"))
    assert _transfer_names(agent) == ["transfer_to_billing", "transfer_to_billing_2", "transfer_to_billing_3"]


def test_a_domain_tool_name_is_never_taken_by_a_transfer_tool() -> None:
    @tool
    def transfer_to_billing() -> str:
        """A domain tool that happens to look like a transfer."""
        return "ok"

    agent = Agent("Router", tools=[transfer_to_billing], handoffs=[Agent("Billing")])
    assert [t.name for t in agent.get_all_tools()] == ["transfer_to_billing", "transfer_to_billing_2"]


def test_tool_names_are_at_most_60_characters_suffix_included() -> None:
    long = "Specialist " * 20
    agent = _router(Agent(long), Agent(long + "!"), Agent(long.upper()), Agent("x" * 200))
    names = _transfer_names(agent)
    assert all(len(n) <= 60 for n in names)
    assert len(set(names)) == 4
    assert names[1].endswith("_2") and names[2].endswith("_3")
    assert not names[0].endswith("_")


_NAMES = ["BillingSpecialist", "AtenciónAlCliente", "請求担当", "Billing", "billing", "💳", "A" * 90]
_SCRIPT = (
    "from gateway import Agent\n"
    f"r = Agent('Router', handoffs=[Agent(n) for n in {_NAMES!r}])\n"
    "print(','.join(t.name for t in r.get_all_tools()))\n"
)


def test_same_names_give_the_same_tool_names_in_every_run() -> None:
    here = ",".join(_transfer_names(_router(*[Agent(n) for n in _NAMES])))
    again = ",".join(_transfer_names(_router(*[Agent(n) for n in _NAMES])))
    other_process = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "12345"}
    ).stdout.strip()
    assert here == again == other_process


def test_description_names_the_target_and_summarizes_its_instructions() -> None:
    billing = Agent("Billing", "You handle refunds,\n   invoices and charges.")
    [transfer] = list(_router(billing).get_all_tools())
    assert transfer.description == (
        "Hand off the dialogue to 'Billing'. Target agent specialty: You handle refunds, invoices and charges."
    )


def test_long_instructions_are_cut_at_a_word_with_an_ellipsis() -> None:
    billing = Agent("Billing", "You handle refunds. " + "Be precise and kind to every customer. " * 20)
    [transfer] = _router(billing).get_all_tools()
    specialty = transfer.description.split("Target agent specialty: ", 1)[1]
    assert specialty.startswith("You handle refunds. Be precise")
    assert specialty.endswith("...") and len(specialty) <= 163


def test_description_prefers_an_explicit_description_and_reads_callable_instructions_docstring() -> None:
    def dynamic(context_variables: dict[str, str]) -> str:
        """Flight changes for the customer in context."""
        return f"You help {context_variables['name']}"

    explicit = Agent("A", "ignored here", description="Lost baggage.")
    from_doc = Agent("B", dynamic)
    descriptions = [t.description for t in _router(explicit, from_doc).get_all_tools()]
    assert descriptions == [
        "Hand off the dialogue to 'A'. Target agent specialty: Lost baggage.",
        "Hand off the dialogue to 'B'. Target agent specialty: Flight changes for the customer in context.",
    ]
    assert from_doc.get_instructions({"name": "Ada"}) == "You help Ada"


def test_callable_instructions_without_a_docstring_are_summarized_from_their_text() -> None:
    vip = Agent("VIP", lambda ctx: f"You serve {ctx['tier']} customers with  premium care.")
    broken = Agent("Broken", lambda ctx: ctx["tier"].upper() + 1)
    descriptions = [t.description for t in _router(vip, broken).get_all_tools()]
    assert descriptions == [
        "Hand off the dialogue to 'VIP'. Target agent specialty: You serve customers with premium care.",
        "Hand off the dialogue to 'Broken'. Target agent specialty: Broken",
    ]


def test_transfer_tool_takes_an_optional_reason_and_returns_a_handoff() -> None:
    [transfer] = _router(Agent("BillingSpecialist")).get_all_tools()
    assert transfer.spec.parameters["properties"].keys() == {"reason"}
    assert transfer.spec.parameters.get("required", []) == []


@pytest.mark.anyio
async def test_calling_a_transfer_tool_returns_handoff_with_the_target_name() -> None:
    [transfer] = _router(Agent("BillingSpecialist")).get_all_tools()
    assert await transfer.invoke({"reason": "refund"}, {}) == Handoff("BillingSpecialist", "refund")
    assert await transfer.invoke({}, {}) == Handoff("BillingSpecialist", None)


def test_bidirectional_handoffs_show_up_on_both_agents() -> None:
    support = Agent("Support", "You answer general questions.")
    billing = Agent("Billing", "You handle invoices.")
    support.add_handoff(billing)
    billing.add_handoff(support)
    assert "transfer_to_billing" in [t.name for t in support.get_all_tools()]
    assert "transfer_to_support" in [t.name for t in billing.get_all_tools()]
    assert support.handoffs == [billing] and billing.handoffs == [support]


def test_add_handoff_refuses_self_and_replaces_a_same_named_peer() -> None:
    support = Agent("Support")
    with pytest.raises(ValueError, match="itself"):
        support.add_handoff(support)
    first, second = Agent("Billing"), Agent("Billing")
    support.add_handoff(first)
    support.add_handoff(second)
    assert support.handoffs == [second]


def test_get_all_tools_lists_domain_tools_then_transfers() -> None:
    def lookup(order_id: str) -> str:
        """Find an order."""
        return order_id

    async def cancel(order_id: str) -> str:
        """Cancel an order."""
        return order_id

    agent = Agent("Orders", tools=[lookup, cancel], handoffs=[Agent("Billing")])
    assert [t.name for t in agent.get_all_tools()] == ["lookup", "cancel", "transfer_to_billing"]
