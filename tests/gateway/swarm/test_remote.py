"""Remote agents as swarm members, end to end: three agent servers on loopback and a local triage.

billing and tech are registered by URL (cards fetched); ops is reached only through a URI a
remote agent names in its handoff. A local triage (offline model) hands off to billing,
billing asks for tech, tech answers. Then billing and ops keep handing the conversation
back and forth until cycle detection stops them.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agent_server import Handoff as HandoffLine, HostedAgent, InputRequired, TaskContext, TextChunk, create_app
from agent_server.http.loopback import free_port
from gateway import Agent, AgentHandoffError, Gateway, Handoff, HostAllowlist, Runner, tool
from gateway.errors import AgentTaskFailed, PeerConnectionError
from gateway.models import ModelResponse, ScriptedModel, ToolCall
from gateway.swarm import ESCALATION_MESSAGE, HUMAN, HandoffPayload, RemoteAgent, StructuredHistory
from protocol import AgentCard, AgentSkill, TaskState
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio


def _gateway() -> Gateway:
    """The agents of these tests hand off to each other by URI, all on 127.0.0.1: allow that host."""
    return Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"]))


@dataclass
class Seen:
    """What each remote agent received (servers run in threads)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    contexts: dict[str, list[TaskContext]] = field(default_factory=dict)

    def add(self, name: str, ctx: TaskContext) -> None:
        with self.lock:
            self.contexts.setdefault(name, []).append(ctx)


def _switchboard(ctx: TaskContext) -> dict[str, Any]:
    return ctx.metadata.get("switchboard", {})


def _conversation(ctx: TaskContext) -> list[dict[str, Any]]:
    data = [p.data for p in ctx.message.parts if getattr(p, "type", "") == "data"]
    return data[0]["conversation"] if data else []


def _billing(seen: Seen, ops_url: str) -> HostedAgent:
    async def billing(ctx: TaskContext) -> AsyncIterator[Any]:
        seen.add("billing", ctx)
        if not _switchboard(ctx).get("handoffs_allowed", True):
            yield "Billing answers directly: your refund is approved."
            return
        if "desk" in ctx.text:
            yield HandoffLine("Triage", "back to the front desk")
            return
        if "nobody" in ctx.text:
            yield HandoffLine("nobody", "no such agent")
            return
        if "loop" in ctx.text:
            yield TextChunk("Billing: ops must look at this. ", cost_usd=0.001)
            yield HandoffLine(ops_url, "ops check")
            return
        yield TextChunk("Billing: the charge is fine, this is technical. ", cost_usd=0.001)
        payload = {"intent": "fix_crash", "extracted_slots": {"device": "router"}}
        yield HandoffLine("tech", "technical problem", payload=payload)

    return HostedAgent("billing", billing, description="Billing: refunds, charges, double charges and invoices.")


def _tech(seen: Seen) -> HostedAgent:
    async def tech(ctx: TaskContext) -> AsyncIterator[Any]:
        seen.add("tech", ctx)
        if ctx.history:
            yield f"Tech: the {ctx.text} is fixed."
            return
        if "explode" in ctx.text:
            raise RuntimeError("tech exploded")
        if "slow" in ctx.text:
            yield InputRequired("Which device is slow?")
            return
        yield "Tech: restart the router, "
        yield "then update the app."

    return HostedAgent("tech", tech, description="Technical support: crashes, errors, routers.")


def _ops(seen: Seen) -> HostedAgent:
    async def ops(ctx: TaskContext) -> AsyncIterator[Any]:
        seen.add("ops", ctx)
        yield "Ops: back to billing. "
        yield HandoffLine("billing", "billing must decide")

    return HostedAgent("ops", ops, description="Operations.")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[dict[str, str], Seen]]:
    seen = Seen()
    ops_port = free_port()
    ops_url = f"http://127.0.0.1:{ops_port}"
    with (
        serve_app(create_app(_billing(seen, ops_url))) as billing_url,
        serve_app(create_app(_tech(seen))) as tech_url,
        serve_app(create_app(_ops(seen)), port=ops_port),
    ):
        yield {"billing": billing_url, "tech": tech_url, "ops": ops_url}, seen


async def _swarm(gateway: Gateway, urls: dict[str, str], **options: Any) -> tuple[Runner, Agent]:
    triage = Agent("triage", "You are the front desk; route customers to the right team.")
    runner = Runner(triage, gateway=gateway, **options)
    billing = await runner.register_remote(urls["billing"])
    await runner.register_remote(urls["tech"])
    triage.add_handoff(billing)
    return runner, triage


async def test_local_triage_to_remote_billing_to_remote_tech_which_answers(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, seen = servers
    async with _gateway() as gateway:
        runner, triage = await _swarm(gateway, urls)
        assert isinstance(runner.agents["billing"], RemoteAgent)
        assert "transfer_to_billing" in [t.name for t in triage.get_all_tools()]
        [transfer] = [t for t in triage.get_all_tools() if t.name == "transfer_to_billing"]
        assert transfer.description.endswith("Billing: refunds, charges, double charges and invoices.")

        response = await runner.run_async("cust-1", "I got a double charge on my invoice, refund please")

        assert response.active_agent_name == "tech"
        assert response.content == "Tech: restart the router, then update the app."
        hops = [(e.fields["source"], e.fields["target"], e.fields["hop"]) for e in response.events_of("handoff")]
        assert hops == [("triage", "billing", 1), ("billing", "tech", 2)]
        assert [e.fields["remote"] for e in response.events_of("handoff")] == [True, True]
        assert [e.fields["agent"] for e in response.events_of("agent_changed")] == ["billing", "tech"]
        deltas = [(e.fields["agent"], e.fields["text"]) for e in response.events_of("text_delta")]
        assert ("tech", "Tech: restart the router, ") in deltas
        assert response.handoff is not None and response.handoff.target_agent_name == "tech"
        assert response.handoff.payload == {"intent": "fix_crash", "extracted_slots": {"device": "router"}}
        costs = {e.fields["agent"]: e.fields.get("cost_usd") for e in response.events_of("message")}
        assert costs["billing"] == pytest.approx(0.001) and costs["tech"] == 0.0  # what each remote task cost

        tech_ctx = seen.contexts["tech"][-1]
        assert tech_ctx.session_id == "cust-1"
        assert tech_ctx.text == "I got a double charge on my invoice, refund please"
        assert _switchboard(tech_ctx)["path"] == ["triage", "billing", "tech"]
        conversation = _conversation(tech_ctx)
        assert conversation[0] == {"role": "user", "content": "I got a double charge on my invoice, refund please"}
        assert conversation[-2]["agent"] == "billing"
        assert conversation[-2]["tool_calls"][0]["name"] == "transfer_to_tech"
        assert "HANDOFF_SUCCESS" in conversation[-1]["content"]

        follow_up = await runner.run_async("cust-1", "It still crashes")
        assert follow_up.events_of("run_started")[0].fields["agent"] == "tech"
        assert follow_up.content.startswith("Tech:")
        assert seen.contexts["tech"][-1].text == "It still crashes"


async def test_two_remote_agents_handing_back_and_forth_are_stopped_by_cycle_detection(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, seen = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls, max_handoffs_per_turn=10)
        response = await runner.run_async("cust-2", "refund loop on my invoice charge")

    hops = [(e.fields["source"], e.fields["target"]) for e in response.events_of("handoff")]
    assert hops == [("triage", "billing"), ("billing", "ops"), ("ops", "billing")]
    [cycle] = response.events_of("cycle_detected")
    assert cycle.fields["path"] == ["billing", "ops", "billing", "ops"]
    [refused] = response.events_of("handoff_refused")
    assert (refused.fields["source"], refused.fields["target"], refused.fields["cause"]) == ("billing", "ops", "cycle")
    assert response.active_agent_name == "billing"
    assert response.content == "Billing answers directly: your refund is approved."
    assert _switchboard(seen.contexts["billing"][-1])["handoffs_allowed"] is False
    assert "goes in circles" in seen.contexts["billing"][-1].text
    assert not response.events_of("limit_reached")
    assert runner.agents["ops"].uri == urls["ops"]


async def test_a_remote_cycle_goes_to_the_fallback_a_local_supervisor_or_a_human(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, _ = servers
    supervisor = Agent("supervisor", model=ScriptedModel([ModelResponse(content="Supervisor: refund approved.")]))
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls, max_handoffs_per_turn=10, fallback=supervisor)
        supervised = await runner.run_async("cust-6", "refund loop on my invoice charge")
        runner, _ = await _swarm(gateway, urls, max_handoffs_per_turn=10, fallback=HUMAN)
        escalated = await runner.run_async("cust-7", "refund loop on my invoice charge")

    assert (supervised.active_agent_name, supervised.content) == ("supervisor", "Supervisor: refund approved.")
    assert [e.fields["target"] for e in supervised.events_of("handoff")] == ["billing", "ops", "billing", "supervisor"]
    [event] = escalated.events_of("escalated")
    assert event.fields == {
        "agent": "billing",
        "reason": "cycle",
        "target": "ops",
        "path": ["triage", "billing", "ops", "billing"],
        "fallback": "human",
    }
    assert (escalated.state, escalated.content) == (TaskState.INPUT_REQUIRED, ESCALATION_MESSAGE)


async def test_remote_hops_count_against_the_handoff_limit(servers: tuple[dict[str, str], Seen]) -> None:
    urls, _ = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls, max_handoffs_per_turn=2)
        response = await runner.run_async("cust-3", "refund loop on my invoice charge")
    assert [e.fields["target"] for e in response.events_of("handoff")] == ["billing", "ops"]
    [limit] = response.events_of("limit_reached")
    assert limit.fields["limit"] == "max_handoffs_per_turn"
    assert response.active_agent_name == "ops"
    assert response.content == "Ops: back to billing. "


async def test_remote_agent_sees_a_structured_payload_under_that_policy(servers: tuple[dict[str, str], Seen]) -> None:
    urls, seen = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls, history_policy=StructuredHistory())
        await runner.run_async("cust-4", "double charge on invoice ORD-991, refund please")
    conversation = _conversation(seen.contexts["tech"][-1])
    assert conversation[0]["role"] == "system"
    assert '"source_agent":"billing"' in conversation[0]["content"]
    assert '"intent":"fix_crash"' in conversation[0]["content"]
    assert '"device":"router"' in conversation[0]["content"]
    assert conversation[1] == {"role": "user", "content": "double charge on invoice ORD-991, refund please"}
    assert _switchboard(seen.contexts["tech"][-1])["history_policy"] == "structured"


async def test_a_remote_agent_handed_the_conversation_gets_the_handoff_payload_in_its_metadata(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, seen = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls)
        await runner.run_async(
            "cust-9", "double charge on invoice ORD-991, refund please", context_variables={"user_id": "u-42"}
        )
        billing_task, tech_task = seen.contexts["billing"][-1], seen.contexts["tech"][-1]
        await runner.run_async("cust-9", "still broken")
        later_task = seen.contexts["tech"][-1]
    arrived = billing_task.metadata["handoff"]
    assert (arrived["source"], arrived["target"]) == ("triage", "billing")
    assert HandoffPayload.model_validate(arrived["payload"]).raw_query == (
        "double charge on invoice ORD-991, refund please"
    )
    handoff = tech_task.metadata["handoff"]
    assert (handoff["source"], handoff["target"], handoff["reason"]) == ("billing", "tech", "technical problem")
    payload = HandoffPayload.model_validate(handoff["payload"])
    assert (payload.source_agent, payload.target_agent, payload.user_id) == ("billing", "tech", "u-42")
    assert (payload.intent, payload.handoff_reason) == ("fix_crash", "technical problem")
    assert payload.extracted_slots == {"user_id": "u-42", "ids": ["ORD-991"], "device": "router"}
    assert payload.raw_query == "double charge on invoice ORD-991, refund please"
    assert "handoff" not in later_task.metadata, "only the first task after the transfer carries it"


async def test_a_local_agent_calls_a_remote_agent_as_a_tool_inside_the_run(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, _ = servers
    async with _gateway() as gateway:
        ask_tech = gateway.add_agent_tool("ask_tech", agent=urls["tech"], mode="streaming")
        model = ScriptedModel(
            [
                ModelResponse(tool_calls=[ToolCall(id="c1", name="ask_tech", arguments={"input": "router?"})]),
                lambda messages: ModelResponse(content="Tech says: " + messages[-1]["content"]),
            ]
        )
        runner = Runner(Agent("desk", tools=[ask_tech], model=model), event_log=gateway.event_log)
        response = await runner.run_async("cust-5", "my router")
    assert response.content == "Tech says: Tech: restart the router, then update the app."
    kinds = [e.type for e in await gateway.event_log.read(response.run_id)]
    assert "agent_tool_invoked" in kinds and "agent_tool_completed" in kinds
    assert kinds.index("tool_call") < kinds.index("agent_tool_invoked") < kinds.index("tool_result")


async def test_the_remote_swarm_example_runs_on_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    from examples import remote_swarm

    await remote_swarm.main()
    out = capsys.readouterr().out
    assert "[-> billing] Billing here" in out
    assert "[-> tech] Tech here" in out
    assert "[-> escalation] A human agent will call you today about session remote-demo." in out


async def test_a_remote_question_keeps_its_task_for_the_next_turn(servers: tuple[dict[str, str], Seen]) -> None:
    urls, seen = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls)
        question = await runner.run_async("cust-6", "refund my invoice charge, and the app is slow")
        asked = seen.contexts["tech"][-1]
        answer = await runner.run_async("cust-6", "laptop")
    assert (question.active_agent_name, question.content) == ("tech", "Which device is slow?")
    assert answer.content == "Tech: the laptop is fixed."
    assert seen.contexts["tech"][-1].task_id == asked.task_id
    assert (await runner.session_store.load("cust-6")).remote_tasks == {}


async def test_a_failed_remote_task_fails_the_turn_and_the_session_keeps_only_the_message(
    servers: tuple[dict[str, str], Seen],
) -> None:
    urls, _ = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls)
        with pytest.raises(AgentTaskFailed, match="failed"):
            await runner.run_async("cust-7", "refund my invoice charge, explode")
        session = await runner.session_store.load("cust-7")
    assert (session.active_agent, session.open_run) == (None, None)
    assert session.history == [{"role": "user", "content": "refund my invoice charge, explode"}]


async def test_a_remote_transfer_to_an_unknown_agent_raises(servers: tuple[dict[str, str], Seen]) -> None:
    urls, _ = servers
    async with _gateway() as gateway:
        runner, _ = await _swarm(gateway, urls)
        with pytest.raises(AgentHandoffError, match="nobody"):
            await runner.run_async("cust-8", "refund my invoice charge, nobody")


async def test_a_remote_agent_hands_back_to_a_local_agent_by_name(servers: tuple[dict[str, str], Seen]) -> None:
    urls, _ = servers
    async with _gateway() as gateway:
        triage = Agent(
            "triage",
            model=ScriptedModel(
                [
                    ModelResponse(tool_calls=[ToolCall(id="t1", name="transfer_to_billing", arguments={})]),
                    ModelResponse(content="Front desk again."),
                ]
            ),
        )
        runner = Runner(triage, gateway=gateway)
        triage.add_handoff(await runner.register_remote(urls["billing"]))
        response = await runner.run_async("cust-9", "take me to the desk")
    assert [(e.fields["source"], e.fields["target"]) for e in response.events_of("handoff")] == [
        ("triage", "billing"),
        ("billing", "triage"),
    ]
    assert (response.active_agent_name, response.content) == ("triage", "Front desk again.")
    seen_by_triage = triage.get_model().calls[1].messages
    assert seen_by_triage[-2]["name"] == "billing"
    assert seen_by_triage[-2]["tool_calls"][0]["function"]["name"] == "transfer_to_triage"
    assert "HANDOFF_SUCCESS" in seen_by_triage[-1]["content"]


async def test_an_unreachable_uri_target_is_a_handoff_error() -> None:
    @tool
    def escalate() -> Handoff:
        """Escalate to an in-process agent that does not exist."""
        return Handoff("local://nobody", "escalation")

    desk = Agent(
        "desk", tools=[escalate], model=ScriptedModel([ModelResponse(tool_calls=[ToolCall("c", "escalate", {})])])
    )
    async with _gateway() as gateway:
        with pytest.raises(PeerConnectionError, match="nobody"):
            await Runner(desk, gateway=gateway).register_remote("local://nobody")
        with pytest.raises(AgentHandoffError, match="cannot reach handoff target 'local://nobody'"):
            await Runner(desk, gateway=gateway).run_async("cust-10", "escalate")


def test_a_remote_agents_description_says_each_thing_once() -> None:
    gateway = Gateway()
    peer = gateway.peer("http://127.0.0.1:9")
    said_twice = AgentCard.standard(name="translator", url="http://127.0.0.1:9", description="Translates phrases.")
    assert RemoteAgent(peer, said_twice).description == "Translates phrases."  # its one skill repeats the card
    skills = [AgentSkill(id=i, name=i, description=d) for i, d in (("fr", "French."), ("de", "German."))]
    more = AgentCard.standard(name="t", url="http://127.0.0.1:9", description="Translates phrases.", skills=skills)
    assert RemoteAgent(peer, more).description == "Translates phrases. French.; German."
