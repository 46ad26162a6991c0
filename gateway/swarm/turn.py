"""The state of one user turn while the runner works on it, and what the turn returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.events import Event, EventType
from gateway.models.base import ChatMessage
from gateway.recorder import RunRecorder

from .handoff import Handoff
from .member import SwarmMember
from .sessions.base import Session


@dataclass
class RunResponse:
    """The result of one turn: who holds the conversation now and what it said."""

    run_id: str
    session_id: str
    active_agent_name: str
    content: str
    handoff: Handoff | None
    messages: list[ChatMessage]
    events: list[Event]
    context_variables: dict[str, Any]

    def events_of(self, type: EventType | str) -> list[Event]:
        kind = type.value if isinstance(type, EventType) else type
        return [e for e in self.events if e.type == kind]


@dataclass
class Turn:
    """Mutable bookkeeping of a turn: the counters the limits read.

    ``path`` lists the agents that held the conversation in this turn, in order, local and
    remote alike: cycle detection reads it, and each accepted transfer adds one entry.
    Events go through ``recorder`` (which keeps them for the turn), whoever emits them.
    """

    session: Session
    recorder: RunRecorder
    agent: SwarmMember
    stream: bool
    path: list[str] = field(default_factory=list)
    tool_calls: int = 0
    transfers_blocked: bool = False
    remote_input: str | None = None
    last_handoff: Handoff | None = None
    content: str = ""
    done: bool = False
    new_messages: list[ChatMessage] = field(default_factory=list)

    @property
    def handoffs(self) -> int:
        """Transfers accepted so far in this turn."""
        return len(self.path) - 1

    async def emit(self, type: EventType, **fields: Any) -> Event:
        """Append to the event log now; the streaming caller gets it at the runner's next flush."""
        return await self.recorder.emit(type, **fields)

    def add(self, message: ChatMessage) -> None:
        """A message produced in this turn: into the session's history and the response."""
        self.session.history.append(message)
        self.new_messages.append(message)

    async def say(self, message: ChatMessage, **fields: Any) -> None:
        """An assistant message (its ``sender`` is the agent), recorded as a ``message`` event too."""
        self.add(message)
        await self.emit(
            EventType.MESSAGE,
            agent=message["sender"],
            role="assistant",
            content=message.get("content") or "",
            tool_calls=message.get("tool_calls", []),
            **fields,
        )

    async def tool_result(self, agent: str, call_id: str, tool: str, content: str, **fields: Any) -> None:
        """The answer to one tool call, in the history and as a ``tool_result`` event."""
        self.add({"role": "tool", "tool_call_id": call_id, "name": tool, "content": content})
        await self.emit(EventType.TOOL_RESULT, agent=agent, tool=tool, call_id=call_id, content=content, **fields)

    def finish(self, content: str) -> None:
        """The active agent answered: the turn ends with ``content``."""
        self.content = content
        self.done = True

    def response(self) -> RunResponse:
        return RunResponse(
            run_id=self.recorder.run_id,
            session_id=self.session.id,
            active_agent_name=self.agent.name,
            content=self.content,
            handoff=self.last_handoff,
            messages=list(self.new_messages),
            events=list(self.recorder.events or []),
            context_variables=dict(self.session.context_variables),
        )
