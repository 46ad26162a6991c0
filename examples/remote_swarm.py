"""A swarm across services: a local triage agent and three agent servers on loopback.

    python -m examples.remote_swarm

billing and tech are registered by URL (their cards are fetched); escalation is known to
nobody but tech, which hands off to it by URI. Remote agents ask for transfers with a
``handoff`` stream line; the gateway resolves the target by name, then by URI scheme,
and streams every answer as it arrives. A URI from a remote agent's answer is followed
only to an allowed host: here any port of 127.0.0.1. Offline model, loopback only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio

from agent_server import Handoff, HostedAgent, TaskContext
from agent_server.http.loopback import free_port
from examples._loopback import serve_agent
from gateway import Agent, Gateway, HostAllowlist, Runner

TECH_WORDS = ("crash", "error", "bug", "broken")


def billing_agent() -> HostedAgent:
    async def billing(ctx: TaskContext) -> AsyncIterator[Any]:
        if any(word in ctx.text.lower() for word in TECH_WORDS):
            yield "That sounds technical; passing you to tech. "
            yield Handoff("tech", "technical problem after a refund")
            return
        yield "Billing here: the duplicate charge is refunded, "
        yield "you will see it in 3 days."

    return HostedAgent("billing", billing, description="Billing: refunds, double charges, invoices and payments.")


def tech_agent(escalation_url: str) -> HostedAgent:
    async def tech(ctx: TaskContext) -> AsyncIterator[Any]:
        if "human" in ctx.text.lower():
            yield "Let me find you a person. "
            yield Handoff(escalation_url, "customer asked for a human")
            return
        yield "Tech here: update to version 4.2, "
        yield "the crash is fixed there."

    return HostedAgent("tech", tech, description="Technical support: crashes, errors and bugs.")


def escalation_agent() -> HostedAgent:
    async def escalation(ctx: TaskContext) -> str:
        return f"A human agent will call you today about session {ctx.session_id}."

    return HostedAgent("escalation", escalation, description="Human escalations.")


CONVERSATION = [
    "I was charged twice, please refund order ORD-1234",
    "And now the app crashes with an error",
    "This is the third time, I want to talk to a human",
]


async def main() -> None:
    escalation_port = free_port()
    escalation_url = f"http://127.0.0.1:{escalation_port}"
    async with (
        serve_agent(billing_agent()) as billing_url,
        serve_agent(tech_agent(escalation_url)) as tech_url,
        serve_agent(escalation_agent(), escalation_port),
        Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway,
    ):
        triage = Agent("triage", "You are the front desk; route customers to billing or tech.")
        runner = Runner(triage, gateway=gateway)
        triage.add_handoff(await runner.register_remote(billing_url))
        triage.add_handoff(await runner.register_remote(tech_url))
        for text in CONVERSATION:
            print(f"user: {text}")
            async for event in runner.run_stream("remote-demo", text):
                if event.type == "agent_changed":
                    print(f"\n  [-> {event.fields['agent']}] ", end="")
                elif event.type == "text_delta":
                    print(event.fields["text"], end="", flush=True)
                elif event.type == "run_completed":
                    print(f"\n  (holding the conversation: {event.fields['active_agent_name']})")


if __name__ == "__main__":
    anyio.run(main)
