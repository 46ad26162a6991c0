"""An agent call another process had in flight, as its run's events hold it: what a takeover re-attaches to.

The call's ``agent_tool_invoked`` names its task (minted by the caller before the send
where the peer lets it: the A2A-NDJSON binding, ``local://``; the server's name for it, from
its first answer, on the standard bindings) and every stream line that reached the log has a
progress event with the line's seq. A gateway taking the run over
follows the task again after the last of those seqs (``Peer.resubscribe``), never sends it
a second time, and carries on with what the log says was received: the text, the cost,
the chunks, the state, a transfer asked for. The call keeps its ``call_id``, so its ending
event closes the call the log opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from gateway.errors import PeerConnectionError
from gateway.peers.base import Peer, Received, StreamRead
from gateway.recording.events import (
    AgentToolInvokedEvent,
    AgentToolProgressEvent,
    Event,
    TextDeltaEvent,
    call_end,
)
from protocol import HandoffRequest


@dataclass(frozen=True)
class Reattach:
    """A call to follow again: how it was invoked, its task, and the progress the log holds of it."""

    invoked: AgentToolInvokedEvent
    task_id: str
    progress: tuple[AgentToolProgressEvent, ...] = ()
    shown: str = ""
    """A member's call: the text its turn passed on (``text_delta``), which may lag ``text`` by the last read."""

    @property
    def call_id(self) -> str:
        return self.invoked.call_id or ""

    @property
    def tool(self) -> str | None:
        return self.invoked.tool

    @property
    def member(self) -> str | None:
        return self.invoked.member

    @property
    def after_seq(self) -> int:
        """The last stream line the log holds (-1: none): the task is followed from the line after it."""
        return max((e.line_seq for e in self.progress if e.line_seq is not None), default=-1)

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.progress if e.text is not None and e.kind == "artifact")

    @property
    def received(self) -> Received:
        return Received(self.text, self.cost_usd)

    @property
    def cost_usd(self) -> float:
        return max((e.accumulated_cost_usd or 0.0 for e in self.progress), default=0.0)

    @property
    def state(self) -> str | None:
        return next((e.state for e in reversed(self.progress) if e.state is not None), None)

    @property
    def handoff(self) -> HandoffRequest | None:
        asked = next((e.handoff for e in self.progress if e.handoff is not None), None)
        return HandoffRequest.model_validate(asked) if asked is not None else None

    @property
    def unshown(self) -> str:
        """What was received but not passed on before the process stopped: passed on first when the call goes on."""
        text = self.text
        return text[len(self.shown) :] if text.startswith(self.shown) else ""


@dataclass(frozen=True)
class Unresumable:
    """A call in flight that cannot be followed again (the log never learnt its task): why, for the run's failure."""

    reason: str


def in_flight(events: Sequence[Event]) -> Reattach | Unresumable | None:
    """The last call of the run that was invoked and never ended; None when no call was in flight."""
    ended = {end.call_id for event in events if (end := call_end(event)) is not None}
    open_calls = [(at, e) for at, e in enumerate(events) if isinstance(e, AgentToolInvokedEvent)]
    open_calls = [(at, e) for at, e in open_calls if e.call_id not in ended]
    if not open_calls:
        return None
    at, invoked = open_calls[-1]
    since = events[at:]
    progress = tuple(e for e in since if isinstance(e, AgentToolProgressEvent) and e.call_id == invoked.call_id)
    task_id = invoked.task_id or next((e.task_id for e in progress if e.task_id is not None), None)
    if task_id is None:  # a server that names tasks had not named it yet, or never answered
        return Unresumable(f"the call to {invoked.agent} was in flight before its task had an id")
    return Reattach(
        invoked,
        task_id,
        progress,
        "".join(e.text for e in since if isinstance(e, TextDeltaEvent) and e.agent == invoked.member),
    )


@asynccontextmanager
async def followed_again(peer: Peer, call: Reattach) -> AsyncIterator[AsyncIterator[StreamRead]]:
    """``peer.resubscribe`` of the call's task after the last line the log holds; a connection that fails before
    the stream opens (a pooled one the agent had closed) is tried once more on a new one: a resubscribe only
    reads, so asking twice is safe."""
    async with AsyncExitStack() as held:
        try:
            stream = await held.enter_async_context(peer.resubscribe(call.task_id, call.after_seq, call.received))
        except PeerConnectionError:
            stream = await held.enter_async_context(peer.resubscribe(call.task_id, call.after_seq, call.received))
        yield stream
