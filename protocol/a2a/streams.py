"""A task's stream both ways between the task model's events (protocol/events.py) and A2A v1.0 stream events.

``StreamEncoder`` (a server): the stream opens with the Task as it was when the events
that follow began; then each status line is a ``statusUpdate``, each artifact line an
``artifactUpdate`` (the first chunk of an artifact creates it, ``append: false``; later ones
append), and a handoff line a ``statusUpdate`` of the current state carrying
``metadata.handoff``. A line's own cost travels as the event's ``metadata.costUsd`` (read
as ``cost_usd`` too).

The last chunk of each artifact is marked ``lastChunk: true`` (clients such as Google
ADK's treat every chunk before it as partial): a chunk is known to be the last when the
next event is the final status or a chunk of another artifact. Chunks are not held back to
learn it: when that next event comes in a later batch than the chunk, which went out
unmarked, a closing chunk goes first, appending one empty text part with ``lastChunk:
true`` (an artifact update holds at least one part).

``StreamDecoder`` (a client): the other way, numbering the events from 0 as ``seq`` and
the artifacts in the order their ids come; a closing chunk adds nothing and is dropped. A
``task`` event, the first of a stream and the first after a resubscribe, is read against
what was already passed on: only what is new in it (an artifact's further text, a changed
state, cost not yet counted) becomes events, so a stream resumed after a cut reads as if
it had never broken. A status update ends the stream (``final``) at a terminal or
interrupted state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from protocol.a2a import mapping, v1
from protocol.a2a.text_updates import TextUpdate, text_update_wire, writable_cost
from protocol.artifacts import ArtifactFold
from protocol.events import ArtifactEvent, HandoffEvent, HandoffRequest, StatusEvent, StreamEvent
from protocol.task import Artifact, Task, TaskState, TaskStatus, TextPart, parts_text

FINAL_STATES = frozenset({*v1.TERMINAL_STATES, *v1.INTERRUPTED_STATES})


@dataclass(frozen=True, slots=True)
class _Chunk:
    """An artifact event to write: whether it appends to what was sent of its artifact, and its ``lastChunk``."""

    event: ArtifactEvent
    append: bool
    last_chunk: bool | None


@dataclass(frozen=True, slots=True)
class _Closing:
    """The closing chunk of the artifact ``index`` (see the module docstring)."""

    index: int


@dataclass(frozen=True, slots=True)
class _Status:
    """A status update to write: the status it carries and its metadata (a cost, a handoff)."""

    status: TaskStatus
    metadata: dict[str, Any]


_Step = _Chunk | _Closing | _Status


class StreamEncoder:
    """The events of one task's stream as v1.0 events, after ``opening()``: the Task the stream starts with.

    Each event is first planned (what it writes: the encoder's state moves on there), then
    written as a model (``encode_batch``, what gRPC and v0.3 translate) or as its wire JSON
    (``encode_batch_wire``, what the SSE streams write: a text chunk without models,
    protocol/a2a/text_updates.py).
    """

    def __init__(self, task: Task) -> None:
        self._task = task
        self.task_id = task.id
        self.context_id = task.session_id
        self._status = task.status
        self._sent = {artifact.index for artifact in task.artifacts}
        self._unfinished: int | None = None  # the artifact whose last chunk went out unmarked

    def opening(self) -> v1.StreamResponse:
        return v1.StreamResponse(task=mapping.task_to_v1(self._task))

    def encode_batch(self, events: Sequence[StreamEvent]) -> list[v1.StreamResponse]:
        """The events ready together, each artifact's last chunk marked (see the module docstring)."""
        return [self._response(step) for step in self._plan(events)]

    def encode_batch_wire(self, events: Sequence[StreamEvent]) -> list[dict[str, Any]]:
        """``encode_batch`` as the responses' ``to_wire()``."""
        return [self._wire(step) for step in self._plan(events)]

    def encode(self, event: StreamEvent) -> v1.StreamResponse:
        """One event as it is, no chunk marked last: ``encode_batch`` is what a stream writes."""
        return self._response(self._step(event, last_chunk=False))

    def _plan(self, events: Sequence[StreamEvent]) -> list[_Step]:
        steps: list[_Step] = []
        last = len(events) - 1
        for position, event in enumerate(events):
            if self._unfinished is not None and _ends_artifact(event, self._unfinished):
                steps.append(_Closing(self._unfinished))
                self._unfinished = None
            ends = (
                isinstance(event, ArtifactEvent)
                and position < last
                and _ends_artifact(events[position + 1], event.artifact.index)
            )
            steps.append(self._step(event, last_chunk=ends))
        return steps

    def _step(self, event: StreamEvent, *, last_chunk: bool) -> _Step:
        if isinstance(event, ArtifactEvent):
            artifact = event.artifact
            append = bool(artifact.append) and artifact.index in self._sent
            self._sent.add(artifact.index)
            last_chunk = last_chunk or bool(artifact.last_chunk)  # the agent may have marked it itself
            self._unfinished = None if last_chunk else artifact.index
            return _Chunk(event, append, True if last_chunk else artifact.last_chunk)
        cost = {mapping.COST_KEY: event.cost_usd} if event.cost_usd is not None else {}
        if isinstance(event, StatusEvent):
            self._status = event.status
            return _Status(event.status, cost)
        return _Status(self._status, {**cost, "handoff": event.handoff.to_wire()})

    def _wire(self, step: _Step) -> dict[str, Any]:
        if isinstance(step, _Chunk):
            update = self._text_update(step)
            if update is not None:
                return text_update_wire(update, last_chunk=step.last_chunk)
        return self._response(step).to_wire()

    def _text_update(self, step: _Chunk) -> TextUpdate | None:
        """The chunk as a ``TextUpdate`` when it is one (one plain text part, nothing else said), else None."""
        event = step.event
        artifact = event.artifact
        if (
            len(artifact.parts) != 1
            or artifact.name is not None
            or artifact.description is not None
            or artifact.metadata is not None
            or not writable_cost(event.cost_usd)
        ):
            return None
        part = artifact.parts[0]
        if type(part) is not TextPart or part.metadata is not None:
            return None
        artifact_id = mapping.artifact_id(artifact.index)
        append = step.append or None
        return TextUpdate(self.task_id, self.context_id, artifact_id, part.text, append, event.cost_usd)

    def _response(self, step: _Step) -> v1.StreamResponse:
        if isinstance(step, _Chunk):
            event = step.event
            update = v1.TaskArtifactUpdateEvent(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=mapping.artifact_to_v1(event.artifact),
                append=step.append or None,
                last_chunk=step.last_chunk,
                metadata={mapping.COST_KEY: event.cost_usd} if event.cost_usd is not None else None,
            )
            return v1.StreamResponse(artifact_update=update)
        if isinstance(step, _Closing):
            closing = v1.Artifact(artifact_id=mapping.artifact_id(step.index), parts=[v1.Part(text="")])
            update = v1.TaskArtifactUpdateEvent(
                task_id=self.task_id, context_id=self.context_id, artifact=closing, append=True, last_chunk=True
            )
            return v1.StreamResponse(artifact_update=update)
        status = v1.TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=mapping.status_to_v1(step.status, self.task_id, self.context_id),
            metadata=step.metadata or None,
        )
        return v1.StreamResponse(status_update=status)


class StreamDecoder:
    """The v1.0 events of one call (its stream and any resubscribed one) as the task model's events.

    ``decode`` raises ValueError (or pydantic's ValidationError) for an event it cannot read
    (a cost that is not a number, a malformed handoff, bytes that are not base64).
    """

    def __init__(self) -> None:
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.final = False
        self._seq = 0
        self._indices: dict[str, int] = {}
        self._passed_on = ArtifactFold()  # the artifacts passed on, to compare a snapshot with
        self._state: TaskState | None = None
        self._cost = 0.0
        self._handed_off = False

    def carry_on(self, task_id: str, text: str, cost_usd: float, after_seq: int) -> None:
        """Read a task another reader followed, as far as it got (the text of its artifacts, its cost), so that the
        snapshot a ``SubscribeToTask`` opens with passes on only what is new (a gateway taking a run over)."""
        self.task_id = task_id
        if text:
            self._passed_on.add_text(0, None, text)
        self._cost = cost_usd
        self._seq = after_seq + 1

    def decode(self, event: v1.StreamResponse, *, final: bool = False) -> list[StreamEvent]:
        """The events ``event`` stands for; ``final`` forces the end (a v0.3 ``final: true``)."""
        if event.task is not None:
            return self._task(event.task, final)
        if event.message is not None:
            return self._reply(event.message)
        if event.status_update is not None:
            update = event.status_update
            self._ids(update.task_id, update.context_id)
            status = mapping.status_from_v1(update.status)
            is_final = final or update.status.state in FINAL_STATES
            return [*self._handoff(update.metadata), self._status(status, _cost(update.metadata), is_final)]
        chunk = event.artifact_update
        assert chunk is not None
        self._ids(chunk.task_id, chunk.context_id)
        if _is_closing(chunk):
            return []
        cost = _cost(chunk.metadata)
        if cost is None:
            cost = _cost(chunk.artifact.metadata)
        index = self._index(chunk.artifact.artifact_id)
        artifact = mapping.artifact_from_v1(chunk.artifact, index)
        artifact.append = bool(chunk.append) or None
        artifact.last_chunk = chunk.last_chunk
        return [self._artifact(artifact, cost)]

    def decode_text(self, update: TextUpdate) -> tuple[int, int]:
        """``decode`` of a text update read without models (text_updates.py), its event not made: the ``seq`` and
        the artifact ``index`` of the one ArtifactEvent ``decode`` would give (its ``id`` is ``task_id``, its
        artifact the one text part, ``append`` or None, its cost the update's)."""
        self._ids(update.task_id, update.context_id)
        index = self._index(update.artifact_id)
        self._passed_on.add_text(index, update.append or None, update.text)
        seq = self._seq
        self._seq += 1
        self._cost += update.cost_usd or 0.0
        return seq, index

    def _task(self, task: v1.Task, final: bool) -> list[StreamEvent]:
        """A snapshot: what in it was not passed on yet."""
        self._ids(task.id, task.context_id)
        events: list[StreamEvent] = []
        total = _cost(task.metadata)
        unseen = max(total - self._cost, 0.0) if total is not None else None
        for artifact in task.artifacts or []:
            index = self._index(artifact.artifact_id)
            event = self._catch_up(mapping.artifact_from_v1(artifact, index), unseen)
            if event is not None:
                events.append(event)
                unseen = None
        if not self._handed_off:
            events.extend(self._handoff(task.metadata))
        status = mapping.status_from_v1(task.status)
        is_final = final or task.status.state in FINAL_STATES
        if status.state is not self._state or is_final or unseen:
            events.append(self._status(status, unseen or None, is_final))
        return events

    def _catch_up(self, artifact: Artifact, cost: float | None) -> StreamEvent | None:
        """The artifact as a snapshot has it, against what was passed on of it: its new text appended, or all of it."""
        have = next((a for a in self._passed_on.artifacts if a.index == artifact.index), None)
        if have is not None and have.parts == artifact.parts:
            return None
        if have is not None and _text_only(have) and _text_only(artifact):
            old, new = parts_text(have.parts), parts_text(artifact.parts)
            if new.startswith(old):
                chunk = artifact.model_copy(update={"parts": [TextPart(text=new[len(old) :])], "append": True})
                return self._artifact(chunk, cost)
        return self._artifact(artifact, cost)

    def _reply(self, message: v1.Message) -> list[StreamEvent]:
        """A direct Message answer ends the stream: the task it amounts to, completed."""
        task = mapping.reply_task(message)
        self._ids(task.id, task.session_id)
        return [self._artifact(task.artifacts[0], None), self._status(task.status, None, True)]

    def _handoff(self, metadata: dict[str, Any] | None) -> list[StreamEvent]:
        raw = (metadata or {}).get("handoff")
        if raw is None:
            return []
        try:
            handoff = HandoffRequest.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(f"metadata.handoff is not a handoff request: {exc.errors()[0]['msg']}") from None
        self._handed_off = True
        return [self._next(HandoffEvent(seq=self._seq, id=self._task_id(), handoff=handoff))]

    def _status(self, status: TaskStatus, cost: float | None, final: bool) -> StreamEvent:
        self._state = status.state
        self.final = self.final or final
        return self._next(StatusEvent(seq=self._seq, id=self._task_id(), status=status, final=final, cost_usd=cost))

    def _artifact(self, artifact: Artifact, cost: float | None) -> StreamEvent:
        self._passed_on.add(artifact)
        return self._next(ArtifactEvent(seq=self._seq, id=self._task_id(), artifact=artifact, cost_usd=cost))

    def _next(self, event: StreamEvent) -> StreamEvent:
        self._seq += 1
        self._cost += event.cost_usd or 0.0
        return event

    def _index(self, artifact_id: str) -> int:
        return self._indices.setdefault(artifact_id, len(self._indices))

    def _ids(self, task_id: str, context_id: str | None) -> None:
        self.task_id = self.task_id or task_id
        self.context_id = self.context_id or context_id

    def _task_id(self) -> str:
        return self.task_id or ""


def _cost(metadata: dict[str, Any] | None) -> float | None:
    """A reported cost, a number (whether it is a sensible one, the caller's engine decides)."""
    value = mapping.cost_of(metadata)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"metadata.{mapping.COST_KEY} is not a number: {value!r}")
    return float(value)


def _ends_artifact(event: StreamEvent, index: int) -> bool:
    """Whether ``event`` shows the artifact ``index`` is complete: the final status, or a chunk of another one."""
    if isinstance(event, ArtifactEvent):
        return event.artifact.index != index
    return isinstance(event, StatusEvent) and event.final


def _is_closing(chunk: v1.TaskArtifactUpdateEvent) -> bool:
    """A closing chunk (``StreamEncoder``): the last one, appending nothing but empty text and costing nothing."""
    return (
        bool(chunk.append and chunk.last_chunk)
        and not chunk.metadata
        and all(part.text == "" and part.metadata is None for part in chunk.artifact.parts)
    )


def _text_only(artifact: Artifact) -> bool:
    return all(isinstance(part, TextPart) and part.metadata is None for part in artifact.parts)
