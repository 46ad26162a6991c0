"""One interface for every transport: an agent the gateway can send a task to.

A stream is an async context manager yielding an async iterator, so that whatever a
transport holds open (an HTTP response, an MCP call running in a task) is closed when the
caller's block ends, in the caller's task. It yields items one by one, or in lists: the
items that one network read brought (the A2A-NDJSON peer), which the caller records together
(one commit of the event log for all of them). Its items are parsed A2A stream events (an
artifact line of one plain text part, from the NDJSON peer, as a ``TextLine``), plus
``RawLine`` for a line that is not one, ``OversizedLine`` for a line over the limit,
``SkippedBytes`` for bytes that are not UTF-8 dropped from the next line,
``StreamTooLarge`` when the whole stream grew past its limit (the last item), and
``Resubscribed`` where a stream cut before its final line was picked up again.

A peer speaks one binding (``binding``: ``a2a-ndjson``, ``jsonrpc-1.0``, ``jsonrpc-0.3``, ``grpc-1.0``,
``local``, ``mcp``). ``names_tasks`` says whether a new task's id is the caller's to choose
(the NDJSON binding, in-process, MCP) or the server's, named in its first answer (JSON-RPC, gRPC).
A peer found by URI may have to learn its binding first: ``resolve()`` returns the peer that
speaks it (itself, for every peer that knows).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

from gateway.errors import AgentToolError
from protocol import (
    AgentCard,
    Artifact,
    ArtifactEvent,
    HandoffEvent,
    OversizedLine,
    SkippedBytes,
    StatusEvent,
    Task,
    TaskSendParams,
    TextPart,
)


@dataclass(frozen=True)
class RawLine:
    """A stream line that is not a valid event: the text of malformed JSON, or an object that is no event."""

    raw: str | dict[str, Any]


@dataclass(frozen=True)
class StreamTooLarge:
    """The stream sent more than ``limit`` bytes in all (``size`` when it was noticed); nothing more is read."""

    size: int
    limit: int


@dataclass(frozen=True)
class Resubscribed:
    """The stream broke (``why``) and a resubscribe picked it up: the ``attempt``-th of the call, from 1.

    The events after it continue the stream exactly where it broke (nothing lost, nothing twice).
    """

    attempt: int
    why: str


@dataclass(slots=True)
class TextLine:
    """An artifact line of the most common shape, one plain text part, as the NDJSON peer reads it (and the SSE
    peers a v1.0 text update): its fields checked by hand (``a2a_http._text_chunk``,
    ``protocol.a2a.text_updates``) rather than built into three models (``ArtifactEvent``, ``Artifact``,
    ``TextPart``), whose validation and objects (for the cyclic GC to walk while a read is relayed) would be
    paid on every chunk.

    It stands for the ``ArtifactEvent`` that parsing the line would give; ``artifact`` and ``to_wire`` make it.
    ``cost_usd`` is a finite float >= 0, or None.
    """

    seq: int
    id: str
    cost_usd: float | None
    index: int
    append: bool | None
    text: str
    final: ClassVar[bool] = False

    @property
    def artifact(self) -> Artifact:
        return Artifact(parts=[TextPart(text=self.text)], index=self.index, append=self.append)

    def to_wire(self) -> dict[str, Any]:
        return ArtifactEvent(seq=self.seq, id=self.id, cost_usd=self.cost_usd, artifact=self.artifact).to_wire()


StreamItem = (
    StatusEvent
    | ArtifactEvent
    | TextLine
    | HandoffEvent
    | RawLine
    | OversizedLine
    | SkippedBytes
    | StreamTooLarge
    | Resubscribed
)
StreamRead = StreamItem | list[StreamItem]
"""What a stream yields: one item, or the items (never none) that arrived together, in order."""


def items_of(read: StreamRead) -> list[StreamItem]:
    return read if isinstance(read, list) else [read]


@dataclass(frozen=True)
class Received:
    """What of a task a call had passed on when its process stopped: its text and its accumulated cost."""

    text: str = ""
    cost_usd: float = 0.0


UNRESOLVED = "unresolved"
"""The ``binding`` of a peer that has not learnt it yet (an http(s):// agent before its card is read)."""
OnSent = Callable[[], None]
"""Called once the request starts being written on a connection (the clock of a reply deadline starts)."""
OnTask = Callable[[str], None]
"""Called with the task's id as soon as the peer names it, where the server names tasks."""


class Peer(abc.ABC):
    """An agent reachable by URI. Errors are ``gateway.errors.AgentToolError`` subclasses."""

    uri: str
    binding: str = "custom"
    names_tasks: bool = True

    async def resolve(self) -> Peer:
        """The peer that speaks this agent's binding."""
        return self

    @abc.abstractmethod
    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        """Run one turn to its end (or to ``input-required``) and return the task.

        ``on_sent`` is called once the request is on its way (for HTTP: written on a
        connection, after any wait for one), so a reply deadline counts only the agent's time;
        ``on_task`` with the task's id as soon as a server that names tasks has named it.
        """

    @abc.abstractmethod
    def subscribe(self, params: TaskSendParams) -> AbstractAsyncContextManager[AsyncIterator[StreamRead]]:
        """Start a turn and stream its events as they arrive."""

    def resubscribe(
        self, task_id: str, after_seq: int, received: Received | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamRead]]:
        """Follow a task already started, from its line after ``after_seq`` through its final one; nothing is sent.

        A gateway that takes over a run whose process died re-attaches so to the call that
        process had in flight. ``received``: what of the task reached the run's log, for a
        binding that cannot start after a seq (standard A2A's ``SubscribeToTask`` opens with the
        whole task) to pass on only what is new. A binding that cannot follow a task again at
        all raises ``AgentToolError`` (reason ``not_resumable``) and the run fails.
        """
        raise AgentToolError(
            f"{self.uri} speaks {self.binding}, over which a task cannot be followed again from a seq",
            reason="not_resumable",
        )

    @abc.abstractmethod
    async def cancel(self, task_id: str) -> bool:
        """Ask the peer to stop the task; True when it acknowledged (the task is canceled)."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> Task:
        """The task as the peer has it now."""

    @abc.abstractmethod
    async def card(self) -> AgentCard: ...

    async def aclose(self) -> None:
        """Release what the peer holds open between calls (a gRPC channel); the gateway calls it as it closes."""
