"""A peer's stream, whatever its binding: its byte budget, where it ends, resumed after a cut, folded into a task.

Every binding reads a stream into the same items (base.py); what is done with them does not
depend on how they came: a stream holds at most ``max_stream_bytes`` across its resubscribes
(``ByteBudget``), a cut before its final event is picked up again (``resumed``), and the
standard bindings, whose server names the task, fold a stream into the final Task a
``send`` answers (``fold_stream``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass
from typing import Any

from gateway.errors import AgentToolError, PeerConnectionError, PeerProtocolError
from gateway.peers.base import OnTask, Resubscribed, StreamRead, StreamTooLarge, TextLine, items_of
from protocol import (
    ArtifactEvent,
    ArtifactFold,
    HandoffEvent,
    OversizedLine,
    StatusEvent,
    Task,
    TaskState,
    TaskStatus,
)
from protocol.a2a import StreamDecoder
from protocol.a2a.text_updates import TextUpdate

Segment = AsyncGenerator[StreamRead, None]
"""The items of one streamed response (a stream, or a resubscribe that continues it)."""
Resume = Callable[[AsyncExitStack], Awaitable[Segment | None]]
"""Continue a cut stream: the next segment (its response entered in the stack given, which
``resumed`` closes once the segment is read), or None when there is nothing to resume by yet."""


@dataclass
class ByteBudget:
    """The bytes one call's stream may still send, across its resubscribes."""

    limit: int
    received: int = 0

    def take(self, size: int) -> StreamTooLarge | None:
        self.received += size
        return StreamTooLarge(size=self.received, limit=self.limit) if self.received > self.limit else None

    async def chunks(self, body: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes | StreamTooLarge, None]:
        """``body``'s chunks as they arrive, closed at the end; past the limit, the StreamTooLarge that ends it."""
        async with aclosing(body) as chunks:
            async for chunk in chunks:
                too_large = self.take(len(chunk))
                if too_large is not None:
                    yield too_large
                    return
                yield chunk
                del chunk  # not held while the next is awaited


def ends_stream(read: StreamRead) -> bool:
    """Nothing is read after a final status line, an oversized line or a stream over its limit."""
    item = read[-1] if isinstance(read, list) else read
    return isinstance(item, OversizedLine | StreamTooLarge) or (isinstance(item, StatusEvent) and item.final)


async def resumed(segment: Segment, held: AsyncExitStack, resume: Resume, max_resubscribes: int) -> Segment:
    """A stream that a cut does not end: ``resume()`` picks it up, at most ``max_resubscribes`` times.

    ``segment`` yields the items of one response (held open by ``held``, closed once it is
    read) and returns at the stream's end (its final event, or an item that ends it). A
    connection that breaks, or a body that ends before that, is resumed; when no resume is
    possible (no attempts left, nothing to name the task by yet, the peer refuses) the break
    is raised, or the items simply end (cut_off).
    """
    attempt = 0
    notice: Resubscribed | None = None
    try:
        while True:
            broke: PeerConnectionError | None = None
            ended = False
            try:
                async with aclosing(segment) as items:
                    if notice is not None:
                        yield notice
                    async for item in items:
                        yield item
                        ended = ended or ends_stream(item)
                        del item  # not held while the next read is awaited
            except PeerConnectionError as exc:
                broke = exc
            await held.aclose()
            if ended:
                return
            held = AsyncExitStack()
            again: Segment | None = None
            if attempt < max_resubscribes:
                try:
                    again = await resume(held)
                except AgentToolError as exc:
                    if broke is not None:
                        raise PeerConnectionError(f"{broke.message}; resubscribing failed: {exc.message}") from exc
                    return
            if again is None:
                if broke is not None:
                    raise broke
                return
            attempt += 1
            notice = Resubscribed(attempt, broke.message if broke else "the stream ended before its final event")
            segment = again
    finally:
        await held.aclose()


async def fold_stream(
    reads: AsyncIterator[StreamRead], decoder: StreamDecoder, on_task: OnTask | None, uri: str
) -> Task:
    """The final Task a stream amounts to: its last status, its artifacts merged, what its events cost."""
    task: Task | None = None
    cost = 0.0
    handoff: dict[str, Any] | None = None
    fold = ArtifactFold()
    async for read in reads:
        for item in items_of(read):
            if isinstance(item, OversizedLine | StreamTooLarge):
                limit = "max_line_bytes" if isinstance(item, OversizedLine) else "max_stream_bytes"
                raise PeerProtocolError(f"{uri} sent more than {item.limit} bytes ({limit})", reason="bad_answer")
            if not isinstance(item, StatusEvent | ArtifactEvent | TextLine | HandoffEvent):
                continue
            if task is None:
                task = Task(id=item.id, session_id=decoder.context_id, status=TaskStatus(state=TaskState.WORKING))
                if on_task is not None:
                    on_task(item.id)
            cost += item.cost_usd or 0.0
            if isinstance(item, TextLine):
                fold.add_text(item.index, item.append, item.text)
            elif isinstance(item, ArtifactEvent):
                fold.add(item.artifact)
            elif isinstance(item, HandoffEvent):
                handoff = item.handoff.to_wire()
            else:
                task.status = item.status
                if item.final:
                    task.artifacts = fold.artifacts
                    task.metadata = {"cost_usd": cost, **({"handoff": handoff} if handoff else {})}
                    return task
    raise PeerProtocolError(f"the stream from {uri} ended without a final event", reason="cut_off")


def text_line(update: TextUpdate, decoder: StreamDecoder) -> TextLine:
    """A standard binding's text update, read by ``decoder`` without models, as the ``TextLine`` it stands for."""
    seq, index = decoder.decode_text(update)
    return TextLine(seq, decoder.task_id or "", update.cost_usd, index, update.append or None, update.text)
