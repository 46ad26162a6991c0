"""The state of one user turn while the runner works on it, what the turn returns, and how it was asked to run.

A step of the active agent (local.py, remote.py) is a ``Step``: it yields where the events
emitted so far should reach a streaming caller, and last, when its agent asks for one, the
``Transfer`` the runner carries out.

``current_turn()`` tells a tool which session and caller it runs for (the blackboard's
tools read it), like ``current_recorder()`` tells an agent tool where to record.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from agent_server.http.auth import Principal
from gateway.calls.reattach import Reattach
from gateway.models.base import ChatMessage, ChatModel, ModelResponse, ToolCall
from gateway.recording.events import Event, EventType
from gateway.recording.recorder import RunRecorder
from gateway.swarm.admission import Refusal
from gateway.swarm.handoff import Handoff
from gateway.swarm.member import SwarmMember
from gateway.swarm.sessions.base import HandoffRecord, Session
from protocol import TaskState

FALLBACK_ANSWER = "Sorry, I could not finish that within the limits of a single turn."


@dataclass(frozen=True)
class RunOptions:
    """OpenAI swarm's run options, for one turn.

    ``model_override``: the model (or a model name) every local agent uses in this turn.
    ``max_turns``: at most this many agent steps (model calls or remote tasks); the turn
    then ends with what was said last. ``execute_tools`` False: the first response with
    tool calls ends the turn, its calls returned (``RunResponse.pending_tool_calls``) and
    answered in the history as not run. ``debug``: every event printed to stderr as it
    is recorded.
    """

    model_override: ChatModel | str | None = None
    max_turns: int | None = None
    execute_tools: bool = True
    debug: bool = False

    def __post_init__(self) -> None:
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be >= 1 (or None: no limit but the runner's)")


@dataclass(frozen=True)
class TurnScope:
    """Who a tool runs for: the turn's session, its caller (None: nobody authenticated) and the session's owner."""

    session_id: str
    caller: Principal | None
    owner: str | None = None


_scope: ContextVar[TurnScope | None] = ContextVar("switchboard_turn_scope", default=None)


def current_turn() -> TurnScope | None:
    """The turn the running tool belongs to; None outside a swarm turn."""
    return _scope.get()


@contextmanager
def in_turn(scope: TurnScope) -> Iterator[None]:
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)


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
    state: TaskState = TaskState.COMPLETED
    pending_tool_calls: list[ToolCall] = field(default_factory=list)

    def events_of(self, type: EventType | str) -> list[Event]:
        kind = type.value if isinstance(type, EventType) else type
        return [e for e in self.events if e.type == kind]


def _keep_answering(refused: Refusal) -> None:
    """A local agent told its transfer was refused is asked again, its transfer tools no longer offered."""


@dataclass(frozen=True)
class Transfer:
    """A transfer an agent asked for, its target found: the runner admits it and carries it out.

    ``answer`` writes the result of the call that asked (the transfer done, or why it was
    refused); ``refused`` is what the agent does when it keeps the conversation after all.
    """

    target: SwarmMember
    handoff: Handoff
    answer: Callable[[str], Awaitable[None]]
    refused: Callable[[Refusal], None] = _keep_answering


Step = AsyncGenerator[Transfer | None, None]
"""One step of the active agent: None where events should reach a streaming caller, at most one Transfer, last."""


@dataclass
class Turn:
    """Mutable bookkeeping of a turn: the counters the limits read.

    ``path`` lists the agents that held the conversation in this turn, in order, local and
    remote alike: cycle detection reads it, and each accepted transfer adds one entry.
    Events go through ``recorder`` (which keeps them for the turn), whoever emits them.
    ``arrival`` is a transfer the agent it went to has not been told about yet (a remote
    agent gets it in its task's metadata); ``remote_input``, what a remote agent's next task
    says instead of the user's words (why the transfer it asked for was refused).
    ``message_id`` is the caller's ``messageId`` of the user's words, when the turn came as an
    A2A message: the first remote agent handed those words unchanged passes it on.
    ``resumed``: the turn was taken over from a process that stopped (resume.py);
    ``reattach``, the remote call it had in flight, which the next remote step follows again.
    """

    session: Session
    recorder: RunRecorder
    agent: SwarmMember
    stream: bool
    options: RunOptions = field(default_factory=RunOptions)
    caller: Principal | None = None
    path: list[str] = field(default_factory=list)
    steps: int = 0
    tool_calls: int = 0
    transfers_blocked: bool = False
    remote_input: str | None = None
    last_handoff: Handoff | None = None
    arrival: HandoffRecord | None = None
    content: str = ""
    state: TaskState = TaskState.COMPLETED
    pending_tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    new_messages: list[ChatMessage] = field(default_factory=list)
    message_id: str | None = None
    streamed: dict[str, list[str]] = field(default_factory=dict)
    """Per agent, the text deltas recorded since its last message: a message that is just these joined leaves
    its content out of its event (``content_in_deltas``), so a streamed answer is stored once."""
    reattach: Reattach | None = None
    resumed: bool = False

    @property
    def scope(self) -> TurnScope:
        return TurnScope(self.session.id, self.caller, self.session.owner)

    @property
    def handoffs(self) -> int:
        """Transfers accepted so far in this turn."""
        return len(self.path) - 1

    async def emit(self, type: EventType, **fields: Any) -> Event:
        """Append to the event log now; the streaming caller gets it at the runner's next flush."""
        if type is EventType.TEXT_DELTA:
            self.streamed.setdefault(fields["agent"], []).append(fields["text"])
        return await self.recorder.emit(type, **fields)

    def add(self, message: ChatMessage) -> None:
        """A message produced in this turn: into the session's history and the response."""
        self.session.history.append(message)
        self.new_messages.append(message)

    async def say(self, message: ChatMessage, **fields: Any) -> None:
        """An assistant message (its ``sender`` is the agent), recorded as a ``message`` event too."""
        self.add(message)
        content = message.get("content") or ""
        streamed = "".join(self.streamed.pop(message["sender"], []))
        in_deltas = bool(content) and streamed == content
        await self.emit(
            EventType.MESSAGE,
            agent=message["sender"],
            role="assistant",
            content="" if in_deltas else content,
            content_in_deltas=in_deltas or None,
            tool_calls=message.get("tool_calls", []),
            **fields,
        )

    async def tool_result(self, agent: str, call_id: str, tool: str, content: str, **fields: Any) -> None:
        """The answer to one tool call, in the history and as a ``tool_result`` event."""
        self.add({"role": "tool", "tool_call_id": call_id, "name": tool, "content": content})
        await self.emit(EventType.TOOL_RESULT, agent=agent, tool=tool, call_id=call_id, content=content, **fields)

    def finish(self, content: str, state: TaskState = TaskState.COMPLETED) -> None:
        """The active agent answered: the turn ends with ``content`` (``input-required``: waiting for a human)."""
        self.content = content
        self.state = state
        self.done = True

    def last_said(self) -> str:
        """The text of the last assistant message of this turn ("" when none had text)."""
        return next(
            (
                str(m["content"])
                for m in reversed(self.new_messages)
                if m.get("role") == "assistant" and m.get("content")
            ),
            "",
        )

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
            state=self.state,
            pending_tool_calls=list(self.pending_tool_calls),
        )


def pending_calls_wire(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Tool calls in the OpenAI shape (what ``run_completed`` carries for ``execute_tools=False``)."""
    return list(ModelResponse(tool_calls=calls).to_message().get("tool_calls", []))
