"""A streamed call's lines, read and checked into what each records and adds, before any is recorded.

The lines that one read from the peer brought are read in order, up to one that ends the
call (the final line, a failure, a line the gateway refuses). The engine then appends their
progress events together (one commit of the event log) and adds each line to the result
once its event is appended: whatever happens next, the log holds every chunk the result holds,
and a line that ends the call ends it after the lines before it were recorded and added.

Each line is checked before it is used: its cost (``reports.reported_cost``) against the
budget, its size (``OversizedLine``, ``StreamTooLarge``: the gateway ends the call). Bytes
that were not UTF-8 are counted into the next progress event (``skipped_bytes``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from gateway.calls.budget import Budget
from gateway.calls.reports import data_of, is_direct_reply, reported_cost
from gateway.calls.result import AgentToolResult
from gateway.calls.termination import Terminated
from gateway.errors import AgentTaskFailed, AgentToolError, BudgetExceeded, PeerProtocolError
from gateway.peers.base import RawLine, StreamItem, StreamTooLarge, TextLine
from protocol import (
    Artifact,
    ArtifactEvent,
    HandoffEvent,
    HandoffRequest,
    Message,
    OversizedLine,
    SkippedBytes,
    StatusEvent,
    TaskState,
    TextPart,
    parts_text,
)

logger = logging.getLogger(__name__)

FAILED_STATES = (TaskState.FAILED.value, TaskState.CANCELED.value)
"""The task states that fail the call."""
_EVENTS = (ArtifactEvent, StatusEvent, HandoffEvent)


@dataclass(slots=True)
class Line:
    """A stream line read and checked, not recorded yet: its progress event, and what it adds to the result after."""

    progress: dict[str, Any] | None = None
    """The fields of its progress event (None: it has none)."""
    cost_usd: float | None = None
    """The call's total cost with this line."""
    state: str | None = None
    artifact: Artifact | None = None
    chunk: TextLine | None = None
    """A ``TextLine``'s, instead of ``artifact``."""
    handoff: HandoffRequest | None = None
    text: str = ""
    """What it passes on to ``AgentCall.stream()``."""
    final_text: str | None = None
    """A final status's message: the result's text when it has none."""
    final: bool = False
    reply: Message | None = None
    """A final status that is the agent's direct reply (a Message, no task of its own)."""
    failure: Exception | None = None
    """Raised once the line is added (the task failed, the budget was crossed, the line was refused)."""

    def add_to(self, result: AgentToolResult) -> None:
        """Add the line, once recorded, to the result; raise what it ended the call with."""
        if self.cost_usd is not None:
            result.cost_usd = self.cost_usd
        if self.state is not None:
            result.state = self.state
        if self.chunk is not None:
            result.add_streamed_text(self.chunk.index, self.chunk.append, self.text)
        elif self.artifact is not None:
            result.add_streamed(self.artifact, self.text)
        if self.handoff is not None:
            result.handoff = result.handoff or self.handoff
        if self.final_text is not None and not result.has_text:
            result.text = self.final_text
        if self.reply is not None:
            result.reply = self.reply
        if self.failure is not None:
            raise self.failure


class LineReader:
    """Reads one call's stream lines into ``Line``s and makes the call's progress events' fields.

    It is handed the call's ``result`` only to name the task there as soon as a line does
    (a server that names tasks names it in its first line), so that a cancel has its id.
    """

    def __init__(self, agent: str, budget: Budget, caller: dict[str, Any], result: AgentToolResult) -> None:
        self._agent = agent
        self._budget = budget
        self._caller = caller
        """The fields every event of the call has."""
        self._result = result
        self._skipped_bytes = 0
        """Bytes that were not UTF-8, dropped from lines not yet recorded in a progress event."""
        self.skipped_total = 0

    def read_all(self, items: list[StreamItem]) -> list[Line]:
        """The lines that arrived together, read in order up to one that ends the call (the last then)."""
        lines: list[Line] = []
        total = self._result.cost_usd
        index = self._result.chunks
        for item in items:
            unnamed = self._result.task_id is None
            try:
                line = self.read(item, total, index)
            except (Terminated, AgentToolError) as exc:
                line = Line(failure=exc)
            if unnamed and self._result.task_id is not None and line.progress is not None:
                line.progress["task_id"] = self._result.task_id  # the log's record of it, for a takeover
            lines.append(line)
            index += line.progress is not None
            total = total if line.cost_usd is None else line.cost_usd
            if line.final or line.failure is not None:
                break
        return lines

    def read(self, item: StreamItem, total: float, index: int) -> Line:
        """What one line records and adds; ``total``: the cost before it, ``index``: its chunk index if it has one."""
        if isinstance(item, TextLine):
            return self._read_text_line(item, total, index)
        if isinstance(item, _EVENTS):
            return self._read_event(item, total, index)
        if isinstance(item, OversizedLine):
            error = PeerProtocolError(
                f"{self._agent} sent a line over {item.limit} bytes ({item.size} seen)", reason="line_too_long"
            )
            raise Terminated(error, line_bytes=item.size, max_line_bytes=item.limit)
        if isinstance(item, StreamTooLarge):
            error = PeerProtocolError(
                f"{self._agent} streamed more than {item.limit} bytes in one answer; what came before is kept",
                reason="answer_too_large",
            )
            raise Terminated(error, stream_bytes=item.size, max_stream_bytes=item.limit)
        if isinstance(item, SkippedBytes):
            logger.warning("skipped %d bytes that are not UTF-8 in a stream line from %s", item.count, self._agent)
            self._skipped_bytes += item.count
            self.skipped_total += item.count
            return Line()
        if isinstance(item, RawLine):
            return Line(progress=self.progress_fields(index, total, "raw", raw=item.raw))
        return Line(progress=self.progress_fields(index, total, "resubscribed", attempt=item.attempt, message=item.why))

    def _read_event(self, item: StatusEvent | ArtifactEvent | HandoffEvent, total: float, index: int) -> Line:
        if self._result.task_id is None:
            self._result.task_id = item.id
        cost = reported_cost(item.cost_usd, self._agent, "sent a stream line whose cost_usd")
        total += cost
        final = isinstance(item, StatusEvent) and item.final
        if cost and self._budget.exceeded_by(total):
            # A final line's cost (e.g. the total billed at the end) arrives once the task has ended: no cancel.
            stop = Terminated(
                BudgetExceeded(total, self._budget.max_cost_usd or 0.0),
                cancel=not final,
                rejected_chunk=item.to_wire(),
            )
            state = item.status.state.value if isinstance(item, StatusEvent) and final else None
            return Line(cost_usd=total, state=state, failure=stop)
        if isinstance(item, ArtifactEvent):
            return self._read_artifact(item.artifact, cost, total, index, item.seq)
        if isinstance(item, HandoffEvent):
            handoff = item.handoff.to_wire()
            progress = self.progress_fields(index, total, "handoff", cost_usd=cost, handoff=handoff, line_seq=item.seq)
            return Line(progress=progress, cost_usd=total, handoff=item.handoff)
        state = item.status.state.value
        message = item.status.message
        if not final:
            said = (message.text or None) if message else None
            shown = (data_of(message.parts) or None) if message else None
            progress = self.progress_fields(
                index, total, "status", state=state, cost_usd=cost, text=said, data=shown, line_seq=item.seq
            )
            return Line(progress=progress, cost_usd=total, state=state)
        failure = AgentTaskFailed(state, message.text if message else "") if state in FAILED_STATES else None
        final_text = message.text if message is not None else None
        reply = message if is_direct_reply(item.id, message) else None
        return Line(cost_usd=total, state=state, final_text=final_text, final=True, reply=reply, failure=failure)

    def _read_text_line(self, item: TextLine, total: float, index: int) -> Line:
        """``_read_event`` of a ``TextLine`` (one per chunk, most often): its cost is checked already."""
        if self._result.task_id is None:
            self._result.task_id = item.id
        cost = item.cost_usd or 0.0
        total += cost
        if cost and self._budget.exceeded_by(total):
            stop = Terminated(BudgetExceeded(total, self._budget.max_cost_usd or 0.0), rejected_chunk=item.to_wire())
            return Line(cost_usd=total, failure=stop)
        progress = self._artifact_progress(index, total, cost, item.seq, item.text)
        return Line(progress=progress, cost_usd=total, chunk=item, text=item.text)

    def _read_artifact(self, artifact: Artifact, cost: float, total: float, index: int, seq: int) -> Line:
        """An artifact line."""
        parts = artifact.parts
        if len(parts) == 1 and type(parts[0]) is TextPart:  # a chunk of text, most often: no list to build
            text, data = parts[0].text, None
        else:
            text, data = parts_text(parts), data_of(parts)
        progress = self._artifact_progress(index, total, cost, seq, text, data)
        return Line(progress=progress, cost_usd=total, artifact=artifact, text=text)

    def progress_fields(self, index: int, accumulated_cost_usd: float, kind: str, **fields: Any) -> dict[str, Any]:
        """A progress event's fields, all of them of their declared types (``Event.trusted``): the call's, the
        chunk's index, kind and cost so far, its own fields but the None ones, the bytes skipped since the last one."""
        progress = {**self._caller, "chunk_index": index, "kind": kind, "accumulated_cost_usd": accumulated_cost_usd}
        for key, value in fields.items():
            if value is not None:
                progress[key] = value
        return self._with_skipped(progress)

    def _artifact_progress(
        self, index: int, total: float, cost: float, seq: int, text: str, data: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """``progress_fields`` of an artifact line (one per chunk), written out rather than through keywords."""
        progress = {**self._caller, "chunk_index": index, "kind": "artifact", "accumulated_cost_usd": total}
        progress["cost_usd"] = cost
        progress["line_seq"] = seq
        if text:
            progress["text"] = text
        if data:
            progress["data"] = data
        return self._with_skipped(progress)

    def _with_skipped(self, progress: dict[str, Any]) -> dict[str, Any]:
        """``progress`` with the bytes skipped since the last progress event, if any (counted once)."""
        if self._skipped_bytes:
            progress["skipped_bytes"], self._skipped_bytes = self._skipped_bytes, 0
        return progress
