"""History policies: what the agent that received a handoff sees of the conversation."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from gateway import Agent, FullHistory, Runner, StructuredHistory, SummaryHistory
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import HandoffPayload, HandoffRecord, handoff_payload
from gateway.swarm.history_policy import extract_slots

pytestmark = pytest.mark.anyio

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "Hi, how can I help?", "sender": "Triage"},
    {"role": "user", "content": "Refund order ORD-1234, $42.50, mail ada@example.com"},
    {
        "role": "assistant",
        "content": None,
        "sender": "Triage",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "transfer_to_billing", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "transfer_to_billing", "content": "HANDOFF_SUCCESS"},
    {"role": "assistant", "content": "Billing here.", "sender": "Billing"},
]
RECORD = HandoffRecord("Triage", "Billing", "wants a refund", {"extracted_slots": {"priority": "high"}}, at=5)


async def test_full_history_shows_everything() -> None:
    assert await FullHistory().view(HISTORY, RECORD, {}) == HISTORY


async def test_without_a_handoff_every_policy_shows_everything() -> None:
    for policy in (FullHistory(), SummaryHistory(), StructuredHistory()):
        assert await policy.view(HISTORY, None, {}) == HISTORY


async def test_summary_replaces_what_came_before_the_handoff() -> None:
    view = await SummaryHistory().view(HISTORY, RECORD, {})
    assert [m["role"] for m in view] == ["system", "user", "assistant"]
    note = view[0]["content"]
    assert note.startswith(
        "Summary of the conversation before 'Triage' handed it to 'Billing' (reason: wants a refund):"
    )
    assert "- user: hello" in note and "- Triage: Hi, how can I help?" in note
    assert view[1] == HISTORY[2]
    assert view[2] == HISTORY[5]


async def test_summary_keeps_the_latest_lines_within_max_chars() -> None:
    long = [{"role": "user", "content": f"message number {i}"} for i in range(50)]
    view = await SummaryHistory(max_chars=100).view(
        [*long, {"role": "tool", "content": "x"}], HandoffRecord("A", "B", at=51), {}
    )
    note = view[0]["content"]
    assert "message number 49" in note and "message number 10" not in note


async def test_summary_accepts_a_custom_async_summarizer() -> None:
    seen: list[int] = []

    async def summarize(messages: list[dict[str, Any]]) -> str:
        seen.append(len(messages))
        return "The customer wants money back."

    view = await SummaryHistory(summarizer=summarize).view(HISTORY, RECORD, {})
    assert seen == [5]
    assert view[0]["content"].endswith("The customer wants money back.")


async def test_structured_payload_is_the_documented_handoff_payload() -> None:
    context = {"customer": "Ada", "cart": ["not", "scalar"], "user_id": "u-17"}
    view = await StructuredHistory().view(HISTORY, RECORD, context)
    assert view[0]["role"] == "system"
    payload = orjson.loads(view[0]["content"].split("\n", 1)[1])
    assert payload == {
        "source_agent": "Triage",
        "target_agent": "Billing",
        "user_id": "u-17",
        "intent": "wants a refund",
        "extracted_slots": {
            "customer": "Ada",
            "user_id": "u-17",
            "email": "ada@example.com",
            "amount": 42.5,
            "ids": ["ORD-1234"],
            "priority": "high",
        },
        "handoff_reason": "wants a refund",
        "raw_query": "Refund order ORD-1234, $42.50, mail ada@example.com",
    }
    assert HandoffPayload.model_validate(payload) == handoff_payload(HISTORY[:5], RECORD, context)
    assert view[1:] == [HISTORY[2], HISTORY[5]]


async def test_declared_intent_and_user_wins_and_missing_reason_names_the_transfer() -> None:
    record = HandoffRecord("Triage", "Billing", None, {"intent": "refund", "user_id": 7})
    declared = handoff_payload(HISTORY[:5], record, {"user_id": "someone else"})
    assert (declared.intent, declared.user_id) == ("refund", "7")
    plain = handoff_payload(HISTORY[:5], HandoffRecord("Triage", "Billing"), {})
    assert (plain.intent, plain.handoff_reason, plain.user_id) == ("transfer to Billing", None, None)
    with pytest.raises(ValidationError):
        HandoffPayload.model_validate({**plain.model_dump(), "slots": {}})


def test_slot_extraction_finds_ids_amounts_and_emails() -> None:
    assert extract_slots("order #12345 and ticket AB-778 for 30 dollars, bob@x.org") == {
        "email": "bob@x.org",
        "amount": 30.0,
        "ids": ["12345", "AB-778"],
    }
    assert extract_slots("nothing here") == {}


def test_slot_extraction_reads_long_runs_in_one_pass() -> None:
    """A pasted log or an attack of long runs: each pattern once took time quadratic in a run (70 KB of
    letters held the gateway 16 s, 20 KB of digits 13 s), so with them this test outlasts its timeout."""
    for run in ("x" * 200_000, "1" * 200_000, "A-" * 100_000, "a" * 100_000 + "@" + "b" * 100_000, "a1." * 60_000):
        slots = extract_slots(run + " order #12345 for $30, bob@x.org")
        assert (slots["email"], slots["amount"]) == ("bob@x.org", 30.0)
        assert "12345" in slots["ids"]


def _transfer_swarm(policy: Any) -> tuple[Runner, ScriptedModel]:
    billing_model = ScriptedModel([ModelResponse(content="Billing here.")])
    billing = Agent("Billing", "You do billing.", model=billing_model)
    triage_model = ScriptedModel(
        [
            ModelResponse(content="Let me see."),
            ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_billing", arguments={"reason": "refund"})]),
        ]
    )
    triage = Agent("Triage", "You route.", model=triage_model, handoffs=[billing])
    return Runner(triage, history_policy=policy), billing_model


async def test_the_receiving_agent_sees_the_history_the_policy_shapes() -> None:
    runner, billing_model = _transfer_swarm(FullHistory())
    await runner.run_async("s", "hello")
    await runner.run_async("s", "refund ORD-77 please")
    full = billing_model.calls[0].messages
    assert [m["role"] for m in full] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert full[2] == {"role": "assistant", "content": "Let me see.", "name": "triage"}
    assert "sender" not in full[2]

    runner, billing_model = _transfer_swarm(SummaryHistory())
    await runner.run_async("s", "hello")
    await runner.run_async("s", "refund ORD-77 please")
    summary = billing_model.calls[0].messages
    assert [m["role"] for m in summary] == ["system", "system", "user"]
    assert summary[0]["content"] == "You do billing."
    assert "- Triage: Let me see." in summary[1]["content"]
    assert summary[2] == {"role": "user", "content": "refund ORD-77 please"}

    runner, billing_model = _transfer_swarm(StructuredHistory())
    await runner.run_async("s", "hello")
    await runner.run_async("s", "refund ORD-77 please")
    structured = billing_model.calls[0].messages
    payload = orjson.loads(structured[1]["content"].split("\n", 1)[1])
    assert (payload["source_agent"], payload["target_agent"], payload["handoff_reason"]) == (
        "Triage",
        "Billing",
        "refund",
    )
    assert payload["extracted_slots"] == {"ids": ["ORD-77"]}
    session = await runner.session_store.load("s")
    assert len(session.history) == 6
