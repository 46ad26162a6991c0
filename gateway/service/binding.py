"""The gateway as an agent: its swarm behind the A2A-NDJSON binding, so one gateway can be another's agent.

Each task runs one swarm turn on the swarm session named by the task's ``sessionId`` (the
same sessions ``/sessions/{id}`` uses), and streams the answer's text as it is produced.
When no text was streamed (a non-streaming model), the turn's final content is sent at the
end; a turn escalated to a human (``[swarm] fallback = "human"``) ends the task in
``input-required`` with the escalation's words, and so does a turn whose answering member asked for
input (a remote agent's ``input-required``), with its question: the caller's next message
on that task continues the same session, and so the member's task. The card lists every
agent of the swarm as a skill. When the gateway shuts down, tasks still going are canceled
(state ``canceled``, final line sent), like the runs the service started itself. A caller
over its spend cap has its task end ``failed`` with the limit's message (hosted.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import ExitStack, aclosing
from dataclasses import dataclass, field
from typing import Any

from agent_server import Failed, InputRequired, TaskContext, TextChunk
from gateway.recording.events import (
    MessageEvent,
    RunCompletedEvent,
    RunStartedEvent,
    StreamedMessages,
    TextDeltaEvent,
)
from gateway.recording.spend import charged_to
from gateway.service.core import GatewayService
from gateway.service.hosted import ServedAgent, spend_refused
from protocol import AgentCard, AgentSkill, TaskState
from protocol.errors import SwitchboardError

_INPUT_REQUIRED = TaskState.INPUT_REQUIRED.value
logger = logging.getLogger("gateway.service")


@dataclass
class SwarmAgent(ServedAgent):
    """A HostedAgent whose card is read from the live swarm (agents registered later show up).

    The app serving it says in the card whether calls need a token (it checks them).
    """

    service: GatewayService = field(kw_only=True)

    def card(self, url: str) -> AgentCard:
        if self.service.members.started:
            members = self.service.members.agents().items()
            self.skills = [AgentSkill(id=name, name=name, description=member.specialty) for name, member in members]
        return super().card(url)


def swarm_agent(service: GatewayService) -> SwarmAgent:
    """The swarm as a HostedAgent."""

    async def run(ctx: TaskContext) -> AsyncGenerator[Any, None]:
        if not ctx.text.strip():  # the caller's mistake, not the gateway's: no traceback in the log
            yield Failed("the message has no text: send the user's words as a text part")
            return
        refused = await spend_refused(service.quotas, ctx)
        if refused is not None:
            yield refused
            return
        streamed = False
        await service.sync_registrations()
        asking: str | None = None  # the question that ends the turn, if a member asked one or the turn escalated
        messages = StreamedMessages()  # a message's text may be its text deltas

        async def stop(*_reason: str) -> None:  # at shutdown (no reason), or a cancel of the run
            await agent.cancel_task(ctx.task_id)

        run_id: str | None = None
        meter = service.quotas.meter(ctx.caller.name if ctx.caller is not None else None)
        with service.runs.stoppable(stop), ExitStack() as named, charged_to(meter):
            turn = service.runner.run_stream(
                ctx.session_id, ctx.text, caller=ctx.caller, message_id=ctx.message.message_id
            )
            try:
                async with aclosing(turn) as events:
                    async for event in events:
                        said = messages.text_of(event)
                        if type(event) is RunStartedEvent:  # from now on POST /runs/{id}/cancel finds the task
                            run_id = event.run_id
                            named.enter_context(service.runs.named(event.run_id, stop))
                        elif type(event) is TextDeltaEvent and event.text:
                            streamed = True
                            yield TextChunk(event.text)
                        elif type(event) is MessageEvent and event.role == "assistant":
                            asking = said if event.state == _INPUT_REQUIRED else None
                        elif type(event) is RunCompletedEvent and event.state == _INPUT_REQUIRED:
                            asking = event.content
                        elif type(event) is RunCompletedEvent and not streamed and event.content:
                            yield event.content
            except SwitchboardError as exc:
                logger.info("turn of task %s (run %s) failed: %s", ctx.task_id, run_id, exc)
                # Refused before it began (another caller's session): the caller's to fix, said as it is. Failed
                # once going (an agent's, a model's error): their words stay in the run's events, for its owner.
                said = str(exc) if run_id is None else f"the turn failed; GET /runs/{run_id}/events says why"
                yield Failed(said)
                return
        if asking is not None:
            yield InputRequired(asking)

    description = (
        service.description or f"A Switchboard gateway; its swarm starts with {service.members.starting_agent_name!r}."
    )
    agent = SwarmAgent(name=service.name, handler=run, description=description, service=service)
    return agent
