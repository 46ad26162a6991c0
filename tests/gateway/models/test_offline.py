"""OfflineModel: keyword routing, argument filling, loop safety and determinism."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.models import ChatMessage, ModelResponse, OfflineModel, TextDelta, ToolSpec

pytestmark = pytest.mark.anyio

SYSTEM = {"role": "system", "content": "You are the triage agent for ACME. Route every customer quickly."}


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(name, description, {"type": "object", "properties": properties, "required": required})


def _handoff(name: str, specialty: str) -> ToolSpec:
    return ToolSpec(
        f"transfer_to_{name.lower().replace(' ', '_')}",
        f"Hand off the dialogue to '{name}'. Target agent specialty: {specialty}",
        {"type": "object", "properties": {"reason": {"type": "string"}}},
    )


LOOKUP = _spec(
    "lookup_order", "Look up the shipping status of an order.", {"order_id": {"type": "string"}}, ["order_id"]
)
REFUND = _spec(
    "refund_order",
    "Refund money for an order to the customer.",
    {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    ["order_id", "amount"],
)
WEATHER = _spec("get_weather", "Current weather for a city.", {"city": {"type": "string"}}, ["city"])
BILLING = _handoff("Billing", "refunds, invoices and payment problems")
TECH = _handoff("Tech Support", "login problems, app crashes and error messages")
TOOLS = [LOOKUP, REFUND, WEATHER, BILLING, TECH]


def _user(text: str) -> list[ChatMessage]:
    return [SYSTEM, {"role": "user", "content": text}]


def _called(response: ModelResponse) -> tuple[str, dict[str, Any]]:
    assert response.content == ""
    assert len(response.tool_calls) == 1
    call = response.tool_calls[0]
    return call.name, call.arguments


def _after_call(messages: list[ChatMessage], response: ModelResponse, result: str, **extra: Any) -> list[ChatMessage]:
    """The history a runner would build after executing the model's tool call."""
    call = response.tool_calls[0]
    return [
        *messages,
        {**response.to_message(), **extra},
        {"role": "tool", "tool_call_id": call.id, "content": result},
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Where is my order ORD-1234? Has it shipped?", "lookup_order"),
        ("Please refund 30 dollars on order #5521", "refund_order"),
        ("What's the weather like in Paris?", "get_weather"),
    ],
)
def test_routes_to_the_best_matching_tool(text: str, expected: str) -> None:
    name, _ = _called(OfflineModel().respond(_user(text), TOOLS))
    assert name == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I was charged twice on my last invoice", "transfer_to_billing"),
        ("The app crashes every time I open it", "transfer_to_tech_support"),
    ],
)
def test_hands_off_by_the_target_specialty(text: str, expected: str) -> None:
    name, arguments = _called(OfflineModel().respond(_user(text), TOOLS))
    assert name == expected
    assert arguments == {"reason": text}


def test_handoff_boilerplate_alone_does_not_route() -> None:
    text = "Could you hand off the dialogue to an agent with a specialty?"
    response = OfflineModel().respond(_user(text), [BILLING, TECH])
    assert response.tool_calls == []


def test_fills_ids_and_numbers_from_the_message() -> None:
    _, arguments = _called(OfflineModel().respond(_user("Please refund 30 dollars on order #5521"), TOOLS))
    assert arguments == {"order_id": "5521", "amount": 30.0}

    ship = _spec(
        "ship_boxes",
        "Ship boxes for an order.",
        {"order_id": {"type": "string"}, "quantity": {"type": "integer"}, "note": {"type": "string"}},
        ["order_id", "quantity"],
    )
    _, arguments = _called(OfflineModel().respond(_user("ship 3 boxes for order ORD-77"), [ship]))
    assert arguments == {"order_id": "ORD-77", "quantity": 3}

    _, arguments = _called(OfflineModel().respond(_user("where is order A1B2 now"), [LOOKUP]))
    assert arguments == {"order_id": "A1B2"}

    _, arguments = _called(OfflineModel().respond(_user("refund 300 for order number 5521"), [REFUND]))
    assert arguments == {"order_id": "5521", "amount": 300.0}

    _, arguments = _called(OfflineModel().respond(_user("refund 300 on order ORD-1"), [REFUND]))
    assert arguments == {"order_id": "ORD-1", "amount": 300.0}


def test_required_strings_get_the_message_and_enums_match_words() -> None:
    convert = _spec(
        "convert_units",
        "Convert a quantity between units.",
        {"query": {"type": "string"}, "unit": {"type": "string", "enum": ["meters", "feet"]}},
        ["query"],
    )
    _, arguments = _called(OfflineModel().respond(_user("Convert 5 miles into feet"), [convert]))
    assert arguments == {"query": "Convert 5 miles into feet", "unit": "feet"}


def test_asks_for_a_required_argument_it_cannot_fill() -> None:
    response = OfflineModel().respond(_user("refund my order ORD-1"), [REFUND])
    assert response.tool_calls == []
    assert response.content == "I can refund order for you, but I need the amount. Could you tell me?"


def test_answers_from_the_tool_result_instead_of_calling_again() -> None:
    model = OfflineModel()
    messages = _user("Where is my order ORD-1234?")
    first = model.respond(messages, TOOLS)
    assert _called(first)[0] == "lookup_order"
    second = model.respond(_after_call(messages, first, '{"status": "shipped", "eta": "Tuesday"}'), TOOLS)
    assert second.tool_calls == []
    assert second.content == "Done: status: shipped; eta: Tuesday."


def test_a_failed_tool_is_reported_as_such() -> None:
    messages = _user("Where is my order ORD-1234?")
    first = OfflineModel().respond(messages, TOOLS)
    answer = OfflineModel().respond(_after_call(messages, first, "Error: order ORD-1234 not found"), TOOLS)
    assert answer.content == "Sorry, that did not work: Error: order ORD-1234 not found."


async def test_a_runner_style_loop_terminates() -> None:
    """Feed every call straight back, as a runner would: the model must stop by itself."""
    model = OfflineModel()
    messages = _user("refund 12 on order ORD-9 and look up its shipping status")
    for _ in range(5):
        response = await model.complete(messages, TOOLS)
        if not response.tool_calls:
            break
        messages = _after_call(messages, response, "ok")
    assert response.tool_calls == []
    assert sum(1 for m in messages if m["role"] == "tool") == 1


def test_after_a_handoff_the_new_agent_acts_with_its_own_tools() -> None:
    messages = _user("I want a refund of 30 for order ORD-1234")
    handoff = OfflineModel().respond(messages, [BILLING, TECH])
    assert _called(handoff)[0] == "transfer_to_billing"
    history = _after_call(messages, handoff, "HANDOFF_SUCCESS: now talking to Billing")
    billing_tools = [_handoff("Triage", "general questions"), REFUND]
    name, arguments = _called(OfflineModel().respond(history, billing_tools))
    assert name == "refund_order"
    assert arguments == {"order_id": "ORD-1234", "amount": 30.0}


def test_a_domain_tool_that_transferred_counts_as_a_handoff() -> None:
    escalate = _spec("escalate", "Escalate to a human.", {}, [])
    messages = _user("please escalate, then refund 30 on order ORD-1234")
    first = OfflineModel().respond(messages, [escalate])
    assert _called(first)[0] == "escalate"
    history = _after_call(messages, first, "HANDOFF_SUCCESS: transferred to Billing")
    assert _called(OfflineModel().respond(history, [REFUND]))[0] == "refund_order"


def test_never_calls_a_tool_already_called_for_this_message() -> None:
    messages = _user("I want a refund of 30 for order ORD-1234")
    handoff = OfflineModel().respond(messages, [BILLING])
    history = _after_call(messages, handoff, "HANDOFF_SUCCESS")
    response = OfflineModel().respond(history, [BILLING])
    assert response.tool_calls == []


@pytest.mark.parametrize("speaker_key", ["sender", "name"])
def test_does_not_hand_back_to_the_agent_that_handed_off(speaker_key: str) -> None:
    triage = _handoff("Triage", "refund questions about orders and shipping")
    credit = _spec("issue_credit", "Issue a credit for a shipping fee.", {}, [])
    text = "refund my order shipping fee"
    assert _called(OfflineModel().respond(_user(text), [triage, credit]))[0] == "transfer_to_triage"

    messages = _user(text)
    handoff = OfflineModel().respond(messages, [BILLING])
    history = _after_call(messages, handoff, "HANDOFF_SUCCESS", **{speaker_key: "Triage"})
    assert _called(OfflineModel().respond(history, [triage, credit]))[0] == "issue_credit"
    assert _called(OfflineModel().respond(history, [triage]))[0] == "transfer_to_triage"


def test_template_answer_uses_the_system_prompt() -> None:
    response = OfflineModel().respond(_user("Tell me a joke"), TOOLS)
    assert response.tool_calls == []
    assert response.content == (
        'Hello, I am the triage agent for ACME. You said: "Tell me a joke". '
        "None of my tools fits that; could you tell me more?"
    )
    plain = OfflineModel().respond(
        [{"role": "system", "content": "Answer billing questions politely."}, {"role": "user", "content": "hi"}], []
    )
    assert plain.content == 'Hello. My brief: answer billing questions politely. You said: "hi".'


def test_greets_when_there_is_no_user_message() -> None:
    assert OfflineModel().respond([SYSTEM], TOOLS).content == "Hello, I am the triage agent for ACME. How can I help?"


def test_threshold_controls_routing() -> None:
    messages = _user("what about my order?")
    assert _called(OfflineModel().respond(messages, [LOOKUP]))[0] == "lookup_order"
    assert OfflineModel(min_score=3).respond(messages, [LOOKUP]).tool_calls == []


def test_is_deterministic() -> None:
    messages = _user("Please refund 30 dollars on order #5521")
    first = OfflineModel().respond(messages, TOOLS)
    assert all(OfflineModel().respond(messages, TOOLS) == first for _ in range(3))
    later = OfflineModel().respond([*messages, dict(messages[-1])], TOOLS)
    assert later.tool_calls[0].id != first.tool_calls[0].id


def test_multipart_user_content_is_read() -> None:
    messages = [SYSTEM, {"role": "user", "content": [{"type": "text", "text": "What's the weather in Oslo?"}]}]
    assert _called(OfflineModel().respond(messages, TOOLS))[0] == "get_weather"


async def test_stream_yields_word_deltas_then_the_response() -> None:
    model = OfflineModel()
    messages = _user("Tell me a joke")
    items = [item async for item in model.stream(messages, TOOLS)]
    deltas, final = items[:-1], items[-1]
    assert len(deltas) > 3
    assert all(isinstance(d, TextDelta) for d in deltas)
    assert final == await model.complete(messages, TOOLS)
    assert "".join(d.text for d in deltas) == final.content


async def test_stream_of_a_tool_call_has_no_deltas() -> None:
    items = [item async for item in OfflineModel().stream(_user("weather in Rome"), TOOLS)]
    assert len(items) == 1
    assert items[0].tool_calls[0].name == "get_weather"


def test_the_transfer_description_the_swarm_writes_is_the_one_the_offline_model_reads() -> None:
    from gateway.models.base import parse_transfer_description
    from gateway.swarm import Agent, TransferTool

    tool = TransferTool("transfer_to_billing", Agent("Billing", description="Refunds and invoices."))
    assert parse_transfer_description(tool.description) == ("Billing", "Refunds and invoices.")
    assert parse_transfer_description("Look up an order.") is None
