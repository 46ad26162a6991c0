"""The runner's rules, under a ScriptedModel so every model turn is dictated: transfers, limits,
cycle detection, several handoffs in one response, unregistered targets."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from gateway import Agent, AgentHandoffError, Handoff, Runner, ToolResult, tool
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import HANDOFF_LIMIT_MESSAGE, TOOL_LIMIT_MESSAGE

pytestmark = pytest.mark.anyio


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call_{name}_{len(arguments)}_{id(arguments)}", name=name, arguments=arguments)


def calls(*tool_calls: ToolCall, content: str = "") -> ModelResponse:
    return ModelResponse(content=content, tool_calls=list(tool_calls))


def say(text: str) -> ModelResponse:
    return ModelResponse(content=text)


def tool_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["name"]: m["content"] for m in messages if m["role"] == "tool"}


def offered(model: ScriptedModel, call_index: int) -> list[str]:
    return [spec.name for spec in model.calls[call_index].tools]


async def test_transfer_switches_agent_records_handoff_success_and_new_agent_answers() -> None:
    billing = Agent("Billing", model=ScriptedModel([say("Refund issued.")]))
    triage = Agent(
        "Triage", model=ScriptedModel([calls(call("transfer_to_billing", reason="wants a refund"))]), handoffs=[billing]
    )
    response = await Runner(triage).run_async("s", "refund please")

    assert response.active_agent_name == "Billing"
    assert response.content == "Refund issued."
    assert response.handoff == Handoff("Billing", "wants a refund")
    result = orjson.loads(tool_results(response.messages)["transfer_to_billing"])
    assert result == {"status": "HANDOFF_SUCCESS", "assistant": "Billing", "reason": "wants a refund"}
    assert [m.get("sender") for m in response.messages if m["role"] == "assistant"] == ["Triage", "Billing"]
    kinds = [e.type for e in response.events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed"
    assert kinds.index("handoff") < kinds.index("agent_changed")
    changed = response.events_of("agent_changed")[0]
    assert (changed.fields["previous"], changed.fields["agent"]) == ("Triage", "Billing")
    assert [e.seq for e in response.events] == list(range(len(response.events)))


async def test_the_next_turn_goes_to_the_agent_that_holds_the_conversation() -> None:
    billing = Agent("Billing", model=ScriptedModel([say("Refund issued."), say("Anything else on billing?")]))
    triage = Agent("Triage", model=ScriptedModel([calls(call("transfer_to_billing"))]), handoffs=[billing])
    runner = Runner(triage)
    await runner.run_async("s", "refund please")
    second = await runner.run_async("s", "and the invoice?")
    assert second.active_agent_name == "Billing" and second.content == "Anything else on billing?"
    assert second.handoff is None
    billing_view = billing.get_model().calls[1].messages
    assert billing_view[0] == {"role": "system", "content": billing.get_instructions()}
    assert billing_view[-1] == {"role": "user", "content": "and the invoice?"}


async def test_over_max_handoffs_the_transfer_is_refused_and_the_agent_still_answers() -> None:
    chain = [Agent(f"A{i}") for i in range(7)]
    for here, there in itertools.pairwise(chain):
        here.add_handoff(there)
        here.model = ScriptedModel([calls(call(f"transfer_to_{there.name.lower()}", reason="next"))])
    chain[5].model = ScriptedModel([calls(call("transfer_to_a6")), say("I will help you myself.")])
    response = await Runner(chain[0], max_handoffs_per_turn=5).run_async("s", "go")

    assert response.active_agent_name == "A5"
    assert response.content == "I will help you myself."
    assert tool_results(response.messages)["transfer_to_a6"] == HANDOFF_LIMIT_MESSAGE
    assert [e.fields["target"] for e in response.events_of("handoff")] == ["A1", "A2", "A3", "A4", "A5"]
    [limit] = response.events_of("limit_reached")
    assert limit.fields == {"agent": "A5", "limit": "max_handoffs_per_turn", "value": 5}
    [refused] = response.events_of("handoff_refused")
    assert (refused.fields["target"], refused.fields["cause"]) == ("A6", "max_handoffs_per_turn")
    assert response.handoff == Handoff("A5", "next")
    assert "transfer_to_a6" in offered(chain[5].model, 0)
    assert "transfer_to_a6" not in offered(chain[5].model, 1)


async def test_max_handoffs_zero_keeps_the_starting_agent() -> None:
    billing = Agent("Billing", model=ScriptedModel([]))
    triage = Agent(
        "Triage", model=ScriptedModel([calls(call("transfer_to_billing")), say("Only me today.")]), handoffs=[billing]
    )
    response = await Runner(triage, max_handoffs_per_turn=0).run_async("s", "hi")
    assert (response.active_agent_name, response.content) == ("Triage", "Only me today.")
    assert tool_results(response.messages)["transfer_to_billing"] == HANDOFF_LIMIT_MESSAGE


async def test_max_tool_iterations_bounds_all_tool_executions_and_forces_an_answer() -> None:
    executed: list[int] = []

    @tool
    def step(n: int) -> str:
        """Do one step."""
        executed.append(n)
        return f"step {n} done"

    model = ScriptedModel(
        [
            calls(call("step", n=1), call("step", n=2), call("step", n=3)),
            calls(call("step", n=4), call("step", n=5), call("step", n=6)),
            calls(call("step", n=7), content="Four steps done, stopping here."),
        ]
    )
    agent = Agent("Worker", model=model, tools=[step])
    response = await Runner(agent, max_tool_iterations=4).run_async("s", "work")

    assert sorted(executed) == [1, 2, 3, 4]
    results = [m["content"] for m in response.messages if m["role"] == "tool"]
    assert results == [
        "step 1 done",
        "step 2 done",
        "step 3 done",
        "step 4 done",
        TOOL_LIMIT_MESSAGE,
        TOOL_LIMIT_MESSAGE,
    ]
    assert response.content == "Four steps done, stopping here."
    final_call = model.calls[2]
    assert final_call.tools == []
    assert TOOL_LIMIT_MESSAGE in final_call.messages[-1]["content"]
    assert len(response.events_of("limit_reached")) == 1
    assert response.messages[-1].get("tool_calls") is None


async def test_a_model_that_keeps_calling_tools_after_the_limit_still_ends_the_turn() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    model = ScriptedModel([calls(call("ping")), calls(call("ping"))])
    response = await Runner(Agent("Stubborn", model=model, tools=[ping]), max_tool_iterations=1).run_async("s", "x")
    assert response.content == "Sorry, I could not finish that within the limits of a single turn."
    assert [m["content"] for m in response.messages if m["role"] == "tool"] == ["pong"]
    assert model.calls[1].tools == []
    assert not response.events_of("limit_reached"), "no call was refused: the limit was reached, not exceeded"


async def test_ping_pong_is_cut_by_cycle_detection_below_the_handoff_limit() -> None:
    a, b = Agent("A"), Agent("B")
    a.add_handoff(b)
    b.add_handoff(a)
    a.model = ScriptedModel([calls(call("transfer_to_b")), calls(call("transfer_to_b")), say("A answers after all.")])
    b.model = ScriptedModel([calls(call("transfer_to_a"))])
    response = await Runner(a, max_handoffs_per_turn=5).run_async("s", "bounce")

    assert response.active_agent_name == "A"
    assert response.content == "A answers after all."
    [cycle] = response.events_of("cycle_detected")
    assert cycle.fields["path"] == ["A", "B", "A", "B"]
    assert [(e.fields["source"], e.fields["target"]) for e in response.events_of("handoff")] == [("A", "B"), ("B", "A")]
    refusal = [m["content"] for m in response.messages if m["role"] == "tool"][-1]
    assert "goes in circles" in refusal and "A -> B -> A -> B" in refusal
    assert not response.events_of("limit_reached")
    assert "transfer_to_b" not in offered(a.model, 2)


async def test_handing_back_once_is_not_a_cycle() -> None:
    triage, billing, tech = Agent("Triage"), Agent("Billing"), Agent("Tech")
    triage.add_handoff(billing)
    triage.add_handoff(tech)
    billing.add_handoff(triage)
    triage.model = ScriptedModel([calls(call("transfer_to_billing")), calls(call("transfer_to_tech"))])
    billing.model = ScriptedModel([calls(call("transfer_to_triage"))])
    tech.model = ScriptedModel([say("Tech here.")])
    response = await Runner(triage).run_async("s", "it is broken and I was charged")
    assert response.active_agent_name == "Tech"
    assert [e.fields["target"] for e in response.events_of("handoff")] == ["Billing", "Triage", "Tech"]
    assert not response.events_of("cycle_detected")


async def test_several_handoffs_in_one_response_ordinary_tools_first_only_first_transfer_honoured() -> None:
    order: list[str] = []

    @tool
    def lookup(order_id: str) -> str:
        """Look an order up."""
        order.append(f"lookup {order_id}")
        return f"{order_id}: shipped"

    @tool
    def note(text: str) -> str:
        """Write a note."""
        order.append("note")
        return "noted"

    billing = Agent("Billing", model=ScriptedModel([say("Billing here.")]))
    tech = Agent("Tech", model=ScriptedModel([]))
    triage = Agent("Triage", tools=[lookup, note], handoffs=[billing, tech])
    response_calls = [
        call("transfer_to_billing", reason="refund"),
        call("lookup", order_id="ORD-1"),
        call("transfer_to_tech", reason="crash"),
        call("note", text="x"),
    ]
    triage.model = ScriptedModel([calls(*response_calls)])
    response = await Runner(triage).run_async("s", "refund and crash")

    assert sorted(order) == ["lookup ORD-1", "note"], "both ran (at once, in threads: in either order)"
    tool_events = [e.fields["tool"] for e in response.events_of("tool_call")]
    assert tool_events == ["lookup", "note", "transfer_to_billing", "transfer_to_tech"]
    assert [m["tool_call_id"] for m in response.messages if m["role"] == "tool"] == [c.id for c in response_calls]
    results = tool_results(response.messages)
    assert orjson.loads(results["transfer_to_billing"])["status"] == "HANDOFF_SUCCESS"
    assert "Only the first transfer" in results["transfer_to_tech"]
    assert results["lookup"] == "ORD-1: shipped"
    assert response.active_agent_name == "Billing" and response.content == "Billing here."
    [skipped] = response.events_of("handoff_refused")
    assert (skipped.fields["target"], skipped.fields["cause"], skipped.fields["reason"]) == (
        "Tech",
        "one_per_response",
        "crash",
    )
    assert len(response.events_of("handoff")) == 1


async def test_unregistered_target_raises_and_the_session_keeps_only_the_message() -> None:
    @tool
    def escalate() -> Handoff:
        """Escalate to a human."""
        return Handoff("Ghost", "no such agent")

    triage = Agent("Triage", tools=[escalate], model=ScriptedModel([calls(call("escalate"))]))
    runner = Runner(triage)
    with pytest.raises(AgentHandoffError, match="Ghost"):
        await runner.run_async("s", "help")
    session = await runner.session_store.load("s")
    assert (session.active_agent, session.open_run, session.history) == (
        None,
        None,
        [{"role": "user", "content": "help"}],
    )
    [run_id] = await runner.event_log.list_runs()
    assert (await runner.event_log.read(run_id))[-1].type == "run_failed"


async def test_register_agent_makes_an_unreachable_agent_a_target() -> None:
    refunds = Agent("Refunds", model=ScriptedModel([say("Refunds desk.")]))

    @tool
    def send_to_refunds(reason: str) -> Handoff:
        """Send the customer to the refunds desk."""
        return Handoff("Refunds", reason)

    triage = Agent("Triage", tools=[send_to_refunds])
    runner = Runner(triage)
    assert set(runner.agents) == {"Triage"}
    triage.model = ScriptedModel([calls(call("send_to_refunds", reason="refund"))])
    with pytest.raises(AgentHandoffError):
        await runner.run_async("s1", "refund")

    runner.register_agent(refunds)
    assert set(runner.agents) == {"Triage", "Refunds"}
    triage.model = ScriptedModel([calls(call("send_to_refunds", reason="refund"))])
    response = await runner.run_async("s2", "refund")
    assert (response.active_agent_name, response.content) == ("Refunds", "Refunds desk.")


async def test_registry_indexes_everything_reachable_and_refuses_two_agents_with_one_name() -> None:
    leaf = Agent("Leaf")
    middle = Agent("Middle", handoffs=[leaf])
    root = Agent("Root", handoffs=[middle])
    runner = Runner(root)
    assert set(runner.agents) == {"Root", "Middle", "Leaf"}
    leaf.add_handoff(Agent("Late"))
    assert "Late" in runner.agents
    with pytest.raises(ValueError, match="Middle"):
        runner.register_agent(Agent("Middle"))


async def test_a_tool_may_return_an_agent_or_a_tool_result_with_context_updates() -> None:
    vip = Agent(
        "VIP", instructions=lambda ctx: f"You serve {ctx['tier']} customers.", model=ScriptedModel([say("VIP desk.")])
    )

    @tool
    def classify(context_variables: dict[str, Any]) -> ToolResult:
        """Classify the customer."""
        return ToolResult(
            value={"tier": "gold"}, agent=vip, context_variables={"tier": "gold", "seen_by": context_variables["name"]}
        )

    triage = Agent("Triage", tools=[classify], handoffs=[vip], model=ScriptedModel([calls(call("classify"))]))
    response = await Runner(triage).run_async("s", "hello", context_variables={"name": "Ada"})
    assert response.active_agent_name == "VIP"
    assert response.context_variables == {"name": "Ada", "tier": "gold", "seen_by": "Ada"}
    content = tool_results(response.messages)["classify"]
    assert content.startswith('{"tier":"gold"}') and "HANDOFF_SUCCESS" in content
    assert vip.get_model().calls[0].messages[0]["content"] == "You serve gold customers."

    @tool
    def go_vip() -> Agent:
        """Straight to VIP."""
        return vip

    vip.model = ScriptedModel([say("VIP again.")])
    other = Agent("Other", tools=[go_vip], handoffs=[vip], model=ScriptedModel([calls(call("go_vip"))]))
    assert (await Runner(other).run_async("s", "x")).active_agent_name == "VIP"


async def test_tool_errors_and_unknown_tools_become_tool_results_and_the_turn_goes_on() -> None:
    @tool
    def fragile() -> str:
        """Breaks."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel([calls(call("fragile"), call("missing")), say("Something went wrong, sorry.")])
    response = await Runner(Agent("A", tools=[fragile], model=model)).run_async("s", "x")
    results = tool_results(response.messages)
    assert results["fragile"] == "Error: RuntimeError: disk on fire"
    assert "no tool named 'missing'" in results["missing"]
    assert response.content == "Something went wrong, sorry."


async def test_handoff_context_updates_are_applied_on_transfer() -> None:
    @tool
    def route() -> Handoff:
        """Route with context."""
        return Handoff("B", "ctx", context_variables={"ticket": 7})

    b = Agent("B", model=ScriptedModel([say("B.")]))
    a = Agent("A", tools=[route], handoffs=[b], model=ScriptedModel([calls(call("route"))]))
    response = await Runner(a).run_async("s", "x")
    assert response.context_variables == {"ticket": 7}
    assert response.handoff == Handoff("B", "ctx", {"ticket": 7})
