"""Agent-as-tool in its three modes, a budget cutoff, an idle timeout, and a model calling an agent tool.

    python -m examples.agent_tools

Three agent servers run on loopback: the researcher of examples/researcher.py (six notes,
$0.0005 each), the same researcher paced at one note a second, and an intake agent that
asks questions (``InputRequired``) until it knows who the customer is and which order it
is about. A gateway calls them as tools:

- sync: one ``tasks/send``; the intake agent answers with its first question;
- streaming: the researcher's chunks, printed as they arrive by following the call's run;
- conversational: up to 4 turns on one task, a scripted customer (``next_input``) answering;
- a budget below the researcher's total, and an idle timeout shorter than the slow
  researcher's pace: each ends the call and cancels the task;
- a local swarm agent (offline model) whose model calls the researcher tool.

Offline, no key. Exits 1 if any step did not behave as expected.
"""

from __future__ import annotations

import itertools
import re
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio

from agent_server import HostedAgent, InputRequired, TaskContext
from examples._loopback import serve_agent
from examples.researcher import COST_PER_CHUNK_USD, make_researcher
from gateway import Agent, AgentToolError, AgentToolResult, Gateway, Runner
from gateway.recording.events import Event

NOTES = 6
SLOW_INTERVAL_S = 1.0
IDLE_TIMEOUT_S = 0.3
BUDGET_USD = 0.0012
CUSTOMER_ANSWERS = {"name": "I'm Ada.", "order": "It is about ORD-1234."}
FIRST_MESSAGE = "Hi, my parcel arrived broken."


def intake_agent() -> HostedAgent:
    async def intake(ctx: TaskContext) -> AsyncIterator[Any]:
        said = " ".join(m.text for m in [*ctx.history, ctx.message] if m.role == "user")
        name = re.search(r"\b(?:I am|I'm|name is)\s+([A-Z][a-z]+)", said)
        order = re.search(r"\bORD-\d+\b", said)
        if name is None:
            yield InputRequired("Hello! What is your name?")
        elif order is None:
            yield InputRequired(f"Thanks, {name.group(1)}. Which order is this about (like ORD-1234)?")
        else:
            yield f"Ticket opened for {name.group(1)} about {order.group(0)}: a replacement is on its way."

    return HostedAgent("intake", intake, description="Opens a support ticket once it knows who you are and the order.")


def customer(reply: str, so_far: AgentToolResult) -> str | None:
    """The scripted customer: answers the intake agent's question, or ends the conversation."""
    return next((answer for word, answer in CUSTOMER_ANSWERS.items() if word in reply.lower()), None)


class Checks:
    """Counts the expectations that did not hold and says which."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def __call__(self, ok: bool, what: str) -> None:
        if not ok:
            self.failed.append(what)
            print(f"  !! unexpected: {what}")


async def watched_call(gateway: Gateway, tool: str, text: str) -> tuple[AgentToolResult | AgentToolError, list[Event]]:
    """Call ``tool`` under a run id of our own and print its events live by following that run."""
    run_id = f"run_{tool}_{uuid.uuid4().hex[:8]}"
    outcome: AgentToolResult | AgentToolError
    async with anyio.create_task_group() as group:
        group.start_soon(print_events, gateway, run_id)
        try:
            outcome = await gateway.call_tool(tool, text, run_id=run_id)
        except AgentToolError as exc:
            outcome = exc
        finally:
            await gateway.event_log.close_run(run_id)
    return outcome, await gateway.event_log.read(run_id)


async def print_events(gateway: Gateway, run_id: str) -> None:
    async for event in gateway.event_log.follow(run_id):
        fields = event.fields
        if event.type == "agent_tool_progress" and fields.get("kind") == "artifact":
            print(
                f"    chunk {fields['chunk_index']}: +${fields['cost_usd']:.4f}, "
                f"total ${fields['accumulated_cost_usd']:.4f}  {fields.get('text', '').strip()}"
            )
        elif event.type == "agent_tool_terminated":
            print(
                f"    terminated: {fields['reason']} ({fields['message']}); "
                f"cancel sent: {fields['cancel_sent']}, acknowledged: {fields['cancel_acknowledged']}, "
                f"after {fields['duration_ms'] / 1000:.2f} s"
            )


def cut_off(outcome: AgentToolResult | AgentToolError, events: list[Event], reason: str, check: Checks) -> str:
    """Check that the gateway ended the call for ``reason`` and its cancel was acknowledged; returns the text kept."""
    stop = next((e.fields for e in events if e.type == "agent_tool_terminated"), {})
    kept = outcome.partial.text if isinstance(outcome, AgentToolError) and outcome.partial is not None else ""
    print(f"   the call failed with {type(outcome).__name__}; {kept.count(chr(10))} notes kept from before the cutoff")
    check(stop.get("reason") == reason, f"the call is terminated for {reason}")
    check(stop.get("cancel_sent") is True and stop.get("cancel_acknowledged") is True, "the cancel is acknowledged")
    return kept


async def main() -> int:
    check = Checks()
    async with (
        serve_agent(make_researcher(chunks=NOTES)) as researcher_url,
        serve_agent(make_researcher(name="slow-researcher", chunks=3, interval_s=SLOW_INTERVAL_S)) as slow_url,
        serve_agent(intake_agent()) as intake_url,
        Gateway() as gateway,
    ):
        research = gateway.add_agent_tool(
            "research", researcher_url, mode="streaming", description="Research a topic: streams notes with sources."
        )
        gateway.add_agent_tool("intake", intake_url, mode="sync")
        conversational = {"conversational": {"max_turns": 4, "next_input": customer}}
        gateway.add_agent_tool("intake_chat", intake_url, mode=conversational)
        budget = {"max_cost_usd": BUDGET_USD}
        gateway.add_agent_tool("research_capped", researcher_url, mode="streaming", budget=budget)
        idle_limit = {"idle_timeout_secs": IDLE_TIMEOUT_S}
        gateway.add_agent_tool("research_slow", slow_url, mode="streaming", streaming=idle_limit)

        print(f"1. sync: intake <- {FIRST_MESSAGE!r}")
        asked = await gateway.call_tool("intake", FIRST_MESSAGE)
        print(f"   state {asked.state}: {asked.text}")
        check(asked.state == "input-required" and "name" in asked.text, "sync call ends input-required with a question")

        print(f"\n2. streaming: research <- 'quantum batteries' ({NOTES} notes, ${COST_PER_CHUNK_USD} each)")
        streamed, _ = await watched_call(gateway, "research", "quantum batteries")
        if isinstance(streamed, AgentToolResult):
            print(f"   completed: {streamed.chunks} progress events, ${streamed.cost_usd:.4f}")
        check(isinstance(streamed, AgentToolResult) and streamed.text.count("\n") == NOTES, "all notes streamed")

        print(f"\n3. conversational (max 4 turns): intake_chat <- {FIRST_MESSAGE!r}")
        chat = await gateway.call_tool("intake_chat", FIRST_MESSAGE)
        for turn, reply in enumerate(chat.text.split("\n"), start=1):
            print(f"   turn {turn}: {reply}")
        print(f"   state {chat.state} after {chat.turns} turns")
        check(chat.state == "completed" and chat.turns == 3, "conversation completes in 3 turns")

        total = NOTES * COST_PER_CHUNK_USD
        print(f"\n4. budget: research_capped, max ${BUDGET_USD} (the researcher would spend ${total:.4f})")
        capped, events = await watched_call(gateway, "research_capped", "solid-state batteries")
        kept = cut_off(capped, events, "budget_exceeded", check)
        check(kept.count("\n") == 2, "the notes within the budget are kept")

        print(f"\n5. idle timeout: research_slow, {IDLE_TIMEOUT_S} s idle limit, one note every {SLOW_INTERVAL_S} s")
        idle, events = await watched_call(gateway, "research_slow", "sodium batteries")
        cut_off(idle, events, "idle_timeout", check)

        print("\n6. a local agent's model calls the research tool")
        desk = Agent("desk", "You are the research desk of a lab.", tools=[research])
        response = await Runner(desk, gateway=gateway).run_async("desk-1", "Please research graphene batteries")
        kinds = [e.type for e in await gateway.event_log.read(response.run_id)]
        steps = [(kind, len(list(group))) for kind, group in itertools.groupby(kinds)]
        print("   events: " + " > ".join(kind if n == 1 else f"{kind} x{n}" for kind, n in steps))
        print(f"   [{response.active_agent_name}] {textwrap.shorten(response.content, 100)}")
        check("agent_tool_completed" in kinds and "graphene" in response.content, "the model used the agent tool")

    print("\nall steps behaved as expected" if not check.failed else f"\n{len(check.failed)} step(s) failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
