"""Fallback on limits: when the handoff limit or a ping-pong cycle trips, a supervisor or a human
takes the conversation (Runner(fallback=...)), or the current agent answers (the default)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gateway import Agent, Handoff, MemoryEventLog, MemorySessionStore, Runner
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.service import GatewayService
from gateway.swarm import ESCALATION_MESSAGE, HUMAN, RunResponse
from protocol import TaskState
from tests.support.gateway_service import gateway_server

pytestmark = pytest.mark.anyio


def transfer(target: str) -> ModelResponse:
    name = f"transfer_to_{target.lower()}"
    return ModelResponse(tool_calls=[ToolCall(id=f"c_{target}", name=name, arguments={"reason": "not mine"})])


def say(text: str) -> ModelResponse:
    return ModelResponse(content=text)


def ping_pong(extra_answer: bool = False) -> tuple[Agent, Agent]:
    """A hands to B, B back to A, A to B again: the third transfer repeats the cycle A B A B."""
    a = Agent("A", model=ScriptedModel([transfer("B"), transfer("B"), *([say("A answers.")] if extra_answer else [])]))
    b = Agent("B", model=ScriptedModel([transfer("A")]))
    a.add_handoff(b)
    b.add_handoff(a)
    return a, b


def chain(extra_answer: bool = False) -> Agent:
    """A hands to B, B to C: past max_handoffs_per_turn=1 the second transfer is refused."""
    c = Agent("C", model=ScriptedModel([]))
    b = Agent("B", model=ScriptedModel([transfer("C"), *([say("B answers.")] if extra_answer else [])]), handoffs=[c])
    return Agent("A", model=ScriptedModel([transfer("B")]), handoffs=[b])


def escalation(response: RunResponse) -> dict[str, Any]:
    [event] = response.events_of("escalated")
    return event.fields


async def test_by_default_the_current_agent_answers_after_a_cycle() -> None:
    a, _ = ping_pong(extra_answer=True)
    response = await Runner(a).run_async("s", "help")
    assert (response.active_agent_name, response.content, response.state) == ("A", "A answers.", TaskState.COMPLETED)
    assert response.events_of("escalated") == []


async def test_a_cycle_goes_to_the_supervisor_who_answers_without_passing_the_user_on() -> None:
    supervisor = Agent("Supervisor", model=ScriptedModel([say("Supervisor: I will sort this out myself.")]))
    a, _ = ping_pong()
    response = await Runner(a, fallback=supervisor).run_async("s", "help")

    assert (response.active_agent_name, response.content) == ("Supervisor", "Supervisor: I will sort this out myself.")
    assert escalation(response) == {
        "agent": "A",
        "reason": "cycle",
        "target": "B",
        "path": ["A", "B", "A"],
        "fallback": "Supervisor",
    }
    assert [e.fields["target"] for e in response.events_of("handoff")] == ["B", "A", "Supervisor"]
    assert response.events_of("agent_changed")[-1].fields == {
        "previous": "A",
        "agent": "Supervisor",
        "cause": "fallback",
    }
    assert supervisor.get_model().calls[0].tools == [], "transfers are over for the turn"
    kinds = [e.type for e in response.events]
    assert kinds.index("cycle_detected") < kinds.index("handoff_refused") < kinds.index("escalated")


async def test_the_handoff_limit_goes_to_the_supervisor_named_by_its_name() -> None:
    supervisor = Agent("Supervisor", model=ScriptedModel([say("Supervisor here.")]))
    a = chain()
    runner = Runner(a, max_handoffs_per_turn=1, fallback="Supervisor")
    runner.register_agent(supervisor)
    response = await runner.run_async("s", "help")
    assert (response.active_agent_name, response.content) == ("Supervisor", "Supervisor here.")
    assert escalation(response)["reason"] == "max_handoffs_per_turn"
    assert escalation(response)["path"] == ["A", "B"]
    assert response.events_of("limit_reached")[0].fields["limit"] == "max_handoffs_per_turn"
    assert (await runner.session_store.load("s")).active_agent == "Supervisor"


@pytest.mark.parametrize("trip", ["cycle", "max_handoffs_per_turn"])
async def test_human_ends_the_turn_input_required_with_the_reason_and_the_path(trip: str) -> None:
    starting = ping_pong()[0] if trip == "cycle" else chain()
    runner = Runner(starting, max_handoffs_per_turn=5 if trip == "cycle" else 1, fallback=HUMAN)
    response = await runner.run_async("s", "help")

    assert response.state == TaskState.INPUT_REQUIRED
    assert response.content == ESCALATION_MESSAGE
    fields = escalation(response)
    assert (fields["reason"], fields["fallback"]) == (trip, "human")
    assert fields["path"] == (["A", "B", "A"] if trip == "cycle" else ["A", "B"])
    completed = response.events_of("run_completed")[0].fields
    assert (completed["state"], completed["content"]) == ("input-required", ESCALATION_MESSAGE)
    assert response.messages[-1] == {"role": "assistant", "content": ESCALATION_MESSAGE, "sender": fields["agent"]}
    session = await runner.session_store.load("s")
    assert session.active_agent == fields["agent"] and session.open_run is None


async def test_other_refusals_never_escalate() -> None:
    def stay() -> Handoff:
        """Transfer to myself."""
        return Handoff("A")

    a = Agent(
        "A",
        functions=[stay],
        model=ScriptedModel([ModelResponse(tool_calls=[ToolCall("c", "stay", {})]), say("A stays.")]),
    )
    response = await Runner(a, fallback=HUMAN).run_async("s", "x")
    assert response.events_of("handoff_refused")[0].fields["cause"] == "self"
    assert response.events_of("escalated") == []
    assert (response.state, response.content) == (TaskState.COMPLETED, "A stays.")


async def test_the_gateway_as_an_agent_answers_an_escalated_turn_input_required() -> None:
    """Over the A2A binding, the caller of a gateway learns that a person takes it from there."""
    service = GatewayService(
        ping_pong()[0], session_store=MemorySessionStore(), event_log=MemoryEventLog(), fallback=HUMAN
    )
    with gateway_server(service) as url:
        async with httpx.AsyncClient(base_url=url, timeout=10) as api:
            sent = await api.post("/tasks/send", json={"sessionId": "a2a", "message": {"parts": [{"text": "help"}]}})
    task = sent.json()
    assert task["status"]["state"] == "input-required"
    assert task["status"]["message"]["parts"] == [{"type": "text", "text": ESCALATION_MESSAGE}]
