"""Names of the synthesized transfer tools."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from protocol import MAX_TOOL_NAME_LENGTH, sanitize_agent_name, transfer_tool_name, transfer_tool_names

_TOOL_NAME = re.compile(r"^transfer_to_[a-z0-9_]+$")


def test_ascii_names_are_lower_cased() -> None:
    assert transfer_tool_name("BillingSpecialist") == "transfer_to_billingspecialist"


def test_accents_are_folded_to_ascii() -> None:
    assert transfer_tool_name("AtenciónAlCliente") == "transfer_to_atencionalcliente"


def test_other_characters_become_underscores() -> None:
    assert transfer_tool_name("Tech Support / Tier-2") == "transfer_to_tech_support_tier_2"


def test_names_with_nothing_ascii_left_become_a_hash() -> None:
    for name in ("請求担当", "خدمة العملاء", "🤖🧾", "カスタマー"):
        tool = transfer_tool_name(name)
        assert re.fullmatch(r"transfer_to_u[0-9a-f]{12}", tool), tool
    assert transfer_tool_name("請求担当") != transfer_tool_name("カスタマー")


def test_cyrillic_has_no_ascii_form_and_is_hashed() -> None:
    assert re.fullmatch(r"transfer_to_u[0-9a-f]{12}", transfer_tool_name("Поддержка"))


def test_collisions_get_numbered_suffixes_in_order() -> None:
    names = transfer_tool_names(["Billing", "billing", "BILLING!", "Other"])
    assert names == {
        "Billing": "transfer_to_billing",
        "billing": "transfer_to_billing_2",
        "BILLING!": "transfer_to_billing_3",
        "Other": "transfer_to_other",
    }


def test_taken_names_are_avoided() -> None:
    assert transfer_tool_name("billing", taken={"transfer_to_billing"}) == "transfer_to_billing_2"


def test_long_names_fit_in_60_characters_suffix_included() -> None:
    long = "A" * 200
    names = transfer_tool_names([long, long.lower() + "!", long + "?"])
    assert [len(n) <= MAX_TOOL_NAME_LENGTH for n in names.values()] == [True] * 3
    assert len(set(names.values())) == 3
    assert list(names.values())[1].endswith("_2") and list(names.values())[2].endswith("_3")


def test_a_repeated_agent_name_keeps_one_tool() -> None:
    assert transfer_tool_names(["a", "a"]) == {"a": "transfer_to_a"}


@given(st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=8, unique=True))
def test_names_are_valid_unique_bounded_and_deterministic(agent_names: list[str]) -> None:
    names = transfer_tool_names(agent_names)
    assert names == transfer_tool_names(agent_names)
    assert len(set(names.values())) == len(agent_names)
    for tool in names.values():
        assert _TOOL_NAME.match(tool) and len(tool) <= MAX_TOOL_NAME_LENGTH
    for name in agent_names:
        assert sanitize_agent_name(name) == sanitize_agent_name(name)
