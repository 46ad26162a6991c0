"""OpenAI swarm's controls on the runner, under a ScriptedModel: a tool returning an agent hands off
(also one nothing registered), tool settings reach the model, the tools of one response run
concurrently, and the run options model_override, max_turns, execute_tools and debug."""

from __future__ import annotations

import time
from typing import Any

import anyio
import orjson
import pytest

from gateway import Agent, AgentHandoffError, Runner, ToolResult, tool
from gateway.models import ModelResponse, ModelSettings, ScriptedModel, ToolCall
from gateway.swarm import NOT_RUN_MESSAGE, MemorySessionStore, RunOptions

pytestmark = pytest.mark.anyio


def call(name: str, call_id: str | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id or f"call_{name}", name=name, arguments=arguments)


def calls(*tool_calls: ToolCall, content: str = "") -> ModelResponse:
    return ModelResponse(content=content, tool_calls=list(tool_calls))


def say(text: str) -> ModelResponse:
    return ModelResponse(content=text)


def tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


async def test_a_tool_returning_an_agent_nothing_registered_hands_off_to_it() -> None:
    refunds = Agent("Refunds", model=ScriptedModel([say("Refunds desk here."), say("Still refunds.")]))

    def transfer_to_refunds() -> Agent:
        """Send the customer to refunds."""
        return refunds

    triage = Agent("Triage", functions=[transfer_to_refunds], model=ScriptedModel([calls(call("transfer_to_refunds"))]))
    runner = Runner(triage)
    assert set(runner.agents) == {"Triage"}

    first = await runner.run_async("s", "refund please")
    assert (first.active_agent_name, first.content) == ("Refunds", "Refunds desk here.")
    [(_, result)] = tool_results(first.messages)
    assert orjson.loads(result)["status"] == "HANDOFF_SUCCESS"
    assert set(runner.agents) == {"Triage", "Refunds"}
    second = await runner.run_async("s", "and then?")
    assert (second.active_agent_name, second.content) == ("Refunds", "Still refunds.")
    assert second.events_of("agent_changed") == []


async def test_a_result_naming_an_agent_hands_off_and_merges_its_context() -> None:
    vip = Agent("VIP", instructions=lambda ctx: f"Serve {ctx['tier']} customers.", model=ScriptedModel([say("VIP.")]))

    def classify() -> ToolResult:
        """Classify the customer."""
        return ToolResult(value="gold", agent=vip, context_variables={"tier": "gold"})

    triage = Agent("Triage", functions=[classify], model=ScriptedModel([calls(call("classify"))]))
    response = await Runner(triage).run_async("s", "hello")
    assert (response.active_agent_name, response.context_variables) == ("VIP", {"tier": "gold"})
    assert vip.get_model().calls[0].messages[0]["content"] == "Serve gold customers."


async def test_without_dynamic_agents_an_unregistered_agent_is_refused_and_a_name_clash_always_is() -> None:
    stranger = Agent("Stranger", model=ScriptedModel([say("hi")]))

    def go() -> Agent:
        """Go."""
        return stranger

    triage = Agent("Triage", functions=[go], model=ScriptedModel([calls(call("go"))]))
    with pytest.raises(AgentHandoffError, match="dynamic agents are off"):
        await Runner(triage, dynamic_agents=False).run_async("s", "x")

    impostor = Agent("Billing")
    billing = Agent("Billing", model=ScriptedModel([]))

    def fake() -> Agent:
        """Fake billing."""
        return impostor

    desk = Agent("Desk", functions=[fake], handoffs=[billing], model=ScriptedModel([calls(call("fake"))]))
    with pytest.raises(AgentHandoffError, match="another agent has that name"):
        await Runner(desk).run_async("s", "x")


async def test_an_agent_built_on_each_call_replaces_the_one_adopted_before() -> None:
    def helper() -> Agent:
        """A fresh helper."""
        return Agent("Helper", model=ScriptedModel([say("new helper")]))

    model = ScriptedModel([calls(call("helper")), calls(call("helper"))])
    triage = Agent("Triage", functions=[helper], model=model)
    runner = Runner(triage)
    first = await runner.run_async("a", "help")
    adopted = runner.agents["Helper"]
    second = await runner.run_async("b", "help")
    assert first.content == second.content == "new helper"
    assert runner.agents["Helper"] is not adopted


async def test_tool_choice_and_parallel_tool_calls_reach_the_model() -> None:
    @tool
    def lookup(order_id: str) -> str:
        """Look an order up."""
        return order_id

    model = ScriptedModel([say("ok")])
    agent = Agent("A", tools=[lookup], model=model, tool_choice="lookup", parallel_tool_calls=False)
    await Runner(agent).run_async("s", "x")
    assert model.calls[0].settings == ModelSettings(tool_choice="lookup", parallel_tool_calls=False)
    assert model.calls[0].settings.openai_tool_choice() == {"type": "function", "function": {"name": "lookup"}}
    assert ModelSettings(tool_choice="required").openai_tool_choice() == "required"


async def test_parallel_tool_calls_run_the_tools_of_one_response_at_once_with_results_in_call_order() -> None:
    """Each tool waits for the other to have started: run one after another, the first would time out."""
    started = {"left": anyio.Event(), "right": anyio.Event()}

    @tool
    async def wait_for(mine: str, other: str) -> str:
        """Start, then wait for the other."""
        started[mine].set()
        with anyio.fail_after(10):
            await started[other].wait()
        return f"{mine} saw {other}"

    model = ScriptedModel(
        [
            calls(
                call("wait_for", "c1", mine="left", other="right"), call("wait_for", "c2", mine="right", other="left")
            ),
            say("both done"),
        ]
    )
    response = await Runner(Agent("A", tools=[wait_for], model=model)).run_async("s", "go")
    assert tool_results(response.messages) == [("c1", "left saw right"), ("c2", "right saw left")]
    assert response.content == "both done"


async def test_slow_tools_together_take_about_one_tools_time_and_the_limit_is_counted_exactly() -> None:
    """12 tools of 0.25 s each: about 0.25 s together; one after another would be 3 s (loose bound: 2.5 s)."""
    ran: list[int] = []

    @tool
    async def slow(n: int) -> str:
        """Takes a quarter of a second."""
        await anyio.sleep(0.25)
        ran.append(n)
        return f"slow {n}"

    batch = [call("slow", f"c{n}", n=n) for n in range(14)]
    model = ScriptedModel([calls(*batch), say("done")])
    started = time.monotonic()
    response = await Runner(Agent("A", tools=[slow], model=model), max_tool_iterations=12).run_async("s", "go")
    elapsed = time.monotonic() - started
    assert 0.25 <= elapsed < 2.5
    assert sorted(ran) == list(range(12))
    results = tool_results(response.messages)
    assert [call_id for call_id, _ in results] == [f"c{n}" for n in range(14)]
    assert [content for _, content in results][:12] == [f"slow {n}" for n in range(12)]
    assert [content for _, content in results][12:] == ["Maximum tool iterations exceeded for a single turn."] * 2
    assert response.events_of("run_completed")[0].fields["tool_calls"] == 12


async def test_without_parallel_tool_calls_the_tools_run_one_after_another() -> None:
    order: list[str] = []

    @tool
    async def step(label: str) -> str:
        """One step."""
        order.append(f"start {label}")
        await anyio.sleep(0.01)
        order.append(f"end {label}")
        return label

    model = ScriptedModel([calls(call("step", "c1", label="a"), call("step", "c2", label="b")), say("done")])
    await Runner(Agent("A", tools=[step], model=model, parallel_tool_calls=False)).run_async("s", "go")
    assert order == ["start a", "end a", "start b", "end b"]


async def test_context_updates_of_one_response_merge_in_call_order_and_each_tool_sees_the_context_before() -> None:
    seen: list[Any] = []

    @tool
    def mark(value: int, context_variables: dict[str, Any]) -> ToolResult:
        """Mark."""
        seen.append(context_variables.get("mark"))
        return ToolResult(value="ok", context_variables={"mark": value})

    model = ScriptedModel([calls(call("mark", "c1", value=1), call("mark", "c2", value=2)), say("done")])
    response = await Runner(Agent("A", tools=[mark], model=model)).run_async("s", "go", {"mark": 0})
    assert seen == [0, 0]
    assert response.context_variables == {"mark": 2}


async def test_execute_tools_false_returns_the_calls_instead_of_running_them() -> None:
    ran: list[str] = []

    @tool
    def refund(order_id: str) -> str:
        """Refund."""
        ran.append(order_id)
        return "refunded"

    model = ScriptedModel([calls(call("refund", "c1", order_id="ORD-1"), content="I would refund it."), say("Sure.")])
    runner = Runner(Agent("A", tools=[refund], model=model))
    response = await runner.run_async("s", "refund ORD-1", options=RunOptions(execute_tools=False))
    assert ran == []
    assert response.pending_tool_calls == [call("refund", "c1", order_id="ORD-1")]
    assert response.content == "I would refund it."
    assert tool_results(response.messages) == [("c1", NOT_RUN_MESSAGE)]
    completed = response.events_of("run_completed")[0].fields
    assert completed["pending_tool_calls"][0]["function"] == {"name": "refund", "arguments": '{"order_id":"ORD-1"}'}

    later = await runner.run_async("s", "ok then")
    assert later.content == "Sure." and later.pending_tool_calls == []
    assert [m["role"] for m in model.calls[1].messages] == ["system", "user", "assistant", "tool", "user"]


async def test_max_turns_bounds_the_agent_steps_of_a_turn() -> None:
    @tool
    def step() -> str:
        """Step."""
        return "stepped"

    model = ScriptedModel([calls(call("step", "c1"), content="first"), calls(call("step", "c2")), say("never")])
    response = await Runner(Agent("A", tools=[step], model=model)).run_async("s", "go", options=RunOptions(max_turns=2))
    assert len(model.calls) == 2 and model.remaining == 1
    assert response.content == "first"
    [limit] = response.events_of("limit_reached")
    assert limit.fields == {"agent": "A", "limit": "max_turns", "value": 2}
    with pytest.raises(ValueError, match="max_turns"):
        RunOptions(max_turns=0)


async def test_model_override_replaces_every_agents_model_for_the_turn() -> None:
    billing = Agent("Billing", model=ScriptedModel([]))
    triage = Agent("Triage", model=ScriptedModel([]), handoffs=[billing])
    override = ScriptedModel([calls(call("transfer_to_billing")), say("from the override")])
    response = await Runner(triage).run_async("s", "x", options=RunOptions(model_override=override))
    assert (response.active_agent_name, response.content) == ("Billing", "from the override")
    assert [c.messages[0]["content"] for c in override.calls] == [triage.get_instructions()] * 2


def test_the_blocking_run_takes_swarms_options_and_debug_prints_every_event(
    capsys: pytest.CaptureFixture[str],
) -> None:
    model = ScriptedModel([say("hello there")])
    response = Runner(Agent("A")).run("s", "hi", model_override=model, max_turns=3, debug=True)
    assert response.content == "hello there"
    printed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[switchboard debug] ")]
    events = [orjson.loads(line.removeprefix("[switchboard debug] ")) for line in printed]
    assert [e["type"] for e in events] == [e.type for e in response.events]
    assert events[-1]["content"] == "hello there"


async def test_set_active_agent_hands_the_session_over_between_turns() -> None:
    billing = Agent("Billing", model=ScriptedModel([say("Billing, with your ticket.")]))
    triage = Agent("Triage", handoffs=[billing], model=ScriptedModel([say("Triage here.")]))
    store = MemorySessionStore()
    runner = Runner(triage, session_store=store)
    await runner.run_async("s", "hello")

    session = await store.load("s")
    record = session.set_active_agent(billing, {"ticket": 7}, reason="operator transfer")
    await store.save(session)
    assert (record.source, record.target, record.at) == ("Triage", "Billing", 2)

    response = await runner.run_async("s", "what now?")
    assert (response.active_agent_name, response.content) == ("Billing", "Billing, with your ticket.")
    assert response.context_variables == {"ticket": 7}
    assert (await store.load("s")).handoff == record
