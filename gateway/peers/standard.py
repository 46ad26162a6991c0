"""What the peers of the standard A2A bindings share (JSON-RPC, HTTP+JSON, gRPC): the calls they make of the same
operations, and the answers they read in v1.0's shapes (or v0.3's, translated).

The server names tasks (``names_tasks`` is False): a new task is sent without an id and
known by the id of the stream's first event; a later turn of the same task
(``input-required``) names it as the message's ``taskId``.

- ``send``: for an agent whose card says it streams, the stream folded into the final Task,
  so its id is known from the first event and a deadline can still cancel it; otherwise
  one ``SendMessage``. The folded Task's ``metadata.cost_usd`` is what its events cost.
- ``subscribe``: the binding's stream. A stream cut before its end is picked up by
  ``SubscribeToTask``: its opening Task is read against what was already passed on, so only
  what is new comes through; a task that ended meanwhile (-32004, or HTTP+JSON's
  ``UNSUPPORTED_OPERATION``) is read once with ``GetTask``.
- ``resubscribe`` (a gateway taking a run over): ``SubscribeToTask``, read against what the
  run's log received of the task.
- ``cancel`` and ``get``: ``CancelTask`` and ``GetTask``; a cancel that fails is not acknowledged.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError, PeerRPCError
from gateway.peers.base import OnSent, OnTask, Peer, Received, StreamRead
from gateway.peers.limits import PeerLimits
from gateway.peers.streams import ByteBudget, Segment, fold_stream, resumed
from protocol import A2A_V1, AgentCard, ErrorCode, Task, TaskSendParams, TaskState
from protocol.a2a import StreamDecoder, reply_task, task_from_v1, v03, v1

TaskOperation = Literal["cancel", "get"]


@dataclass(frozen=True)
class Reading:
    """How one call's stream is read, across its resubscribes: the decoder that knows what was passed on, the
    bytes it may still send, and whom to tell once the first request is on its way."""

    decoder: StreamDecoder
    budget: ByteBudget
    on_sent: OnSent | None


class StandardPeer(Peer):
    """An agent over a standard binding, speaking ``version``, described by ``_card``."""

    names_tasks = False
    version: str
    limits: PeerLimits
    _card: AgentCard

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        if not self._card.capabilities.streaming:
            return send_result(await self._send_once(params, on_sent), self.version, self.uri)
        decoder = StreamDecoder()
        async with self._stream(params, decoder, on_sent) as items:
            return await fold_stream(items, decoder, on_task, self.uri)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamRead]]:
        async with self._stream(params, StreamDecoder()) as items:
            yield items

    async def cancel(self, task_id: str) -> bool:
        try:
            task = task_result(await self._task_answer("cancel", task_id), self.version, self.uri)
        except AgentToolError:
            return False
        return task.status.state == TaskState.CANCELED

    async def get(self, task_id: str) -> Task:
        return task_result(await self._task_answer("get", task_id), self.version, self.uri)

    async def card(self) -> AgentCard:
        return self._card

    @abc.abstractmethod
    async def _send_once(self, params: TaskSendParams, on_sent: OnSent | None) -> Any:
        """One ``SendMessage``: its answer as JSON (a SendMessageResponse, or a v0.3 result)."""

    @abc.abstractmethod
    async def _task_answer(self, operation: TaskOperation, task_id: str) -> Any:
        """``CancelTask`` or ``GetTask`` of ``task_id``, answered within ``headers_timeout_s``: the Task as JSON."""

    @abc.abstractmethod
    async def _streamed(self, held: AsyncExitStack, params: TaskSendParams, reading: Reading) -> Segment:
        """``SendStreamingMessage`` opened (its call entered in ``held``): its events, as ``reading`` reads them."""

    @abc.abstractmethod
    async def _resubscribed(self, held: AsyncExitStack, task_id: str, reading: Reading) -> Segment:
        """``SubscribeToTask`` opened the same way; a refusal is raised here, before any event (``PeerRPCError``, or
        a ``PeerHTTPError`` whose ``code`` is the A2A code its body names)."""

    @asynccontextmanager
    async def _stream(
        self, params: TaskSendParams, decoder: StreamDecoder, on_sent: OnSent | None = None
    ) -> AsyncIterator[AsyncIterator[StreamRead]]:
        """The stream of a new turn, resumed after a cut; a task that ended meanwhile (-32004) is read with GetTask."""
        reading = Reading(decoder, ByteBudget(self.limits.max_stream_bytes), on_sent)
        async with AsyncExitStack() as held:
            segment = await self._streamed(held, params, reading)
            resume = functools.partial(self._again, reading=reading)
            async with aclosing(resumed(segment, held, resume, self.limits.max_resubscribes)) as items:
                yield items

    @asynccontextmanager
    async def resubscribe(
        self, task_id: str, after_seq: int, received: Received | None = None
    ) -> AsyncIterator[AsyncIterator[StreamRead]]:
        """``SubscribeToTask``, its opening snapshot read against what was ``received`` (it has no seq to start
        after), so only what is new comes through; a task that has ended is read once with ``GetTask``."""
        decoder = StreamDecoder()
        got = received or Received()
        decoder.carry_on(task_id, got.text, got.cost_usd, after_seq)
        reading = Reading(decoder, ByteBudget(self.limits.max_stream_bytes), None)
        async with AsyncExitStack() as held:
            segment = await self._again(held, reading)
            assert segment is not None  # the decoder knows the task
            resume = functools.partial(self._again, reading=reading)
            async with aclosing(resumed(segment, held, resume, self.limits.max_resubscribes)) as items:
                yield items

    async def _again(self, held: AsyncExitStack, reading: Reading) -> Segment | None:
        """The task followed again with ``SubscribeToTask``; read once with GetTask if it ended meanwhile (-32004)."""
        decoder = reading.decoder
        if decoder.task_id is None:
            return None
        try:
            return await self._resubscribed(held, decoder.task_id, reading)
        except (PeerRPCError, PeerHTTPError) as exc:
            if exc.code != ErrorCode.UNSUPPORTED_OPERATION:
                raise
            return self._snapshot(await self._task_answer("get", decoder.task_id), decoder)

    async def _snapshot(self, result: Any, decoder: StreamDecoder) -> Segment:
        """A task read with GetTask, as the events it adds to what was passed on (it has ended)."""
        for item in decoder.decode(v1.StreamResponse(task=standard_task(result, self.version, self.uri)), final=True):
            yield item


def send_result(result: Any, version: str, uri: str) -> Task:
    """A SendMessage answer: the task, or a direct message as the completed task it amounts to."""
    try:
        if version == A2A_V1:
            answer = v1.SendMessageResponse.model_validate(result)
            message = answer.message
            standard = answer.task
        else:
            legacy = V03_RESULT.validate_python(result)
            if not isinstance(legacy, v03.Task | v03.Message):
                raise ValueError(f"a {legacy.kind} is no answer to message/send")
            message = v03.message_to_v1(legacy) if isinstance(legacy, v03.Message) else None
            standard = v03.task_to_v1(legacy) if isinstance(legacy, v03.Task) else None
        if message is not None:
            return reply_task(message)
        assert standard is not None
        return task_from_v1(standard)
    except (ValidationError, ValueError) as exc:
        raise PeerProtocolError(f"{uri} answered something that is not a task: {exc}", reason="bad_answer") from None


def task_result(result: Any, version: str, uri: str) -> Task:
    """A Task answer in the task model; PeerProtocolError when it is none."""
    try:
        return task_from_v1(standard_task(result, version, uri))
    except ValueError as exc:
        raise PeerProtocolError(f"{uri} answered something that is not a task: {exc}", reason="bad_answer") from None


def standard_task(result: Any, version: str, uri: str) -> v1.Task:
    """A Task answer in v1.0's shapes; PeerProtocolError when it is none."""
    try:
        if version == A2A_V1:
            return v1.Task.model_validate(result)
        return v03.task_to_v1(v03.Task.model_validate(result))
    except (ValidationError, ValueError) as exc:
        raise PeerProtocolError(f"{uri} answered something that is not a task: {exc}", reason="bad_answer") from None


V03_RESULT: TypeAdapter[v03.Task | v03.Message | v03.TaskStatusUpdateEvent | v03.TaskArtifactUpdateEvent] = TypeAdapter(
    v03.StreamResult
)
