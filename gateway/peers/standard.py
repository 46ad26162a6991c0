"""What the peers of the standard A2A bindings share (JSON-RPC, HTTP+JSON): SSE streams read as the task model's
events, resumed after a cut, folded into a Task for a sync call, within the stream's limits.

A binding says only how an operation goes on the wire (``_request``: its HTTP method, path
and body) and how an answer is read (``_result``, ``_event_result``); the rest is here:

- ``subscribe``: the streaming send. A stream cut before its end is picked up by the
  subscribe operation: its opening Task is read against what was already passed on, so only
  what is new comes through; a task that ended meanwhile (``UNSUPPORTED_OPERATION``) is read
  once with the get operation.
- ``send``: for an agent whose card says it streams, the same stream folded into the final
  Task, so its id is known from the first event and a deadline can still cancel it;
  otherwise the plain send. The folded Task's ``metadata.cost_usd`` is what its events cost.
- ``cancel`` and ``get``.

The server names tasks (``names_tasks`` is False): a new task is sent without an id and
known by the id of the stream's first event; a later turn of the same task
(``input-required``) names it as the message's ``taskId``. Every shape is read as v1.0
(a v0.3 peer converts, jsonrpc.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError, PeerRPCError
from gateway.peers.a2a_http import ByteBudget, HttpPeer, Segment
from gateway.peers.base import OnSent, OnTask, RawLine, StreamItem, StreamRead, StreamTooLarge, items_of
from gateway.peers.http_client import PeerResponse
from protocol import (
    AgentCard,
    ArtifactEvent,
    ArtifactFold,
    ErrorCode,
    HandoffEvent,
    OversizedEvent,
    OversizedLine,
    SSEDecoder,
    SSEEvent,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    TaskStatus,
)
from protocol.a2a import StreamDecoder, reply_task, send_request_to_v1, task_from_v1, v1
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE


@dataclass(frozen=True)
class Outgoing:
    """One operation as its binding sends it; ``name``, how errors call it (``SendMessage``, ``POST /message:send``)."""

    method: str
    path: str
    body: bytes | None
    name: str


class StandardPeer(HttpPeer):
    """A standard A2A agent at its card's interface URL (on the host it was registered at)."""

    names_tasks = False
    _card: AgentCard

    # -- what a binding says ---------------------------------------------------------------

    def _request(self, operation: str, params: dict[str, Any]) -> Outgoing:
        """``operation`` (``send``, ``stream``, ``subscribe``, ``get``, ``cancel``) on the wire; the ``params`` of the
        last three are ``{"id": task_id}``."""
        raise NotImplementedError

    def _result(self, content: bytes | bytearray) -> Any:
        """An answer's JSON result; an error answer raises the peer's error."""
        raise NotImplementedError

    def _event_result(self, event: SSEEvent, answer: Any) -> Any:
        """A stream event's JSON StreamResponse; an error event raises the peer's error."""
        raise NotImplementedError

    def _failure(self, error: PeerHTTPError) -> AgentToolError:
        """An error status as the binding means it (the HTTP+JSON peer reads the A2A code from its body)."""
        return error

    def _stream_response(self, result: Any) -> tuple[v1.StreamResponse, bool]:
        """A stream event as v1.0 and whether it ends the stream whatever its state; ValidationError if unreadable."""
        return v1.StreamResponse.model_validate(result), False

    def _send_answer(self, result: Any) -> tuple[v1.Message | None, v1.Task | None]:
        """A send's answer: the direct message, or the task."""
        answer = v1.SendMessageResponse.model_validate(result)
        return answer.message, answer.task

    def _standard_task(self, result: Any) -> v1.Task:
        """A Task answer in v1.0's shapes; PeerProtocolError when it is none."""
        try:
            return v1.Task.model_validate(result)
        except ValidationError as exc:
            raise self._not_a_task(exc) from None

    def _send_params(self, params: TaskSendParams) -> dict[str, Any]:
        return send_request_to_v1(params).to_wire()

    # -- the operations --------------------------------------------------------------------

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        if not self._card.capabilities.streaming:
            result = await self._call("send", self._send_params(params), on_sent=on_sent)
            return self._send_result(result)
        decoder = StreamDecoder()
        async with self._stream(params, decoder, on_sent) as items:
            return await self._fold(items, decoder, on_task)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamRead]]:
        async with self._stream(params, StreamDecoder()) as items:
            yield items

    async def cancel(self, task_id: str) -> bool:
        try:
            task = self._task(await self._call("cancel", {"id": task_id}, short=True))
        except AgentToolError:
            return False
        return task.status.state == TaskState.CANCELED

    async def get(self, task_id: str) -> Task:
        return self._task(await self._call("get", {"id": task_id}, short=True))

    async def card(self) -> AgentCard:
        return self._card

    # -- streams ---------------------------------------------------------------------------

    @asynccontextmanager
    async def _stream(
        self, params: TaskSendParams, decoder: StreamDecoder, on_sent: OnSent | None = None
    ) -> AsyncIterator[AsyncIterator[StreamRead]]:
        budget = ByteBudget(self.limits.max_stream_bytes)

        async def resume(held: AsyncExitStack) -> Segment | None:
            if decoder.task_id is None:
                return None
            try:
                again = await held.enter_async_context(self._open_sse("subscribe", {"id": decoder.task_id}))
            except (PeerRPCError, PeerHTTPError) as exc:
                if exc.code != ErrorCode.UNSUPPORTED_OPERATION:
                    raise
                # the task ended while the stream was cut: read it as it ended
                return self._snapshot(await self._call("get", {"id": decoder.task_id}, short=True), decoder)
            return self._events(again, decoder, budget)

        async with AsyncExitStack() as held:
            response = await held.enter_async_context(self._open_sse("stream", self._send_params(params), on_sent))
            async with aclosing(self._resumed(self._events(response, decoder, budget), held, resume)) as items:
                yield items

    @asynccontextmanager
    async def _open_sse(
        self, operation: str, params: dict[str, Any], on_sent: OnSent | None = None
    ) -> AsyncIterator[PeerResponse]:
        """A stream's response; an answer that is not a stream is the peer's error (or a bad answer)."""
        outgoing = self._request(operation, params)
        assert outgoing.body is not None, "a stream is opened by a POST"
        async with AsyncExitStack() as opened:
            try:
                response = await opened.enter_async_context(self._open_stream(outgoing.path, outgoing.body, on_sent))
            except PeerHTTPError as exc:
                raise self._failure(exc) from None
            if response.headers.get("content-type", "").split(";")[0].strip() == SSE_MEDIA_TYPE:
                yield response
                return
            content = await response.read(self.limits.max_answer_bytes)
        self._result(content)
        raise PeerProtocolError(f"{self.uri} answered {outgoing.name} without a stream", reason="bad_answer")

    async def _events(self, response: PeerResponse, decoder: StreamDecoder, budget: ByteBudget) -> Segment:
        """One response's events, decoded as they arrive; the stream's last event, or a limit, ends it."""
        sse = SSEDecoder(self.limits.max_line_bytes)
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                too_large = budget.take(len(chunk))
                if too_large is not None:
                    yield too_large
                    return
                for event in sse.feed(chunk):
                    if isinstance(event, OversizedEvent):
                        yield OversizedLine(size=event.size, limit=event.limit)
                        return
                    for item in self._decoded(event, decoder):
                        yield item
                    if decoder.final:
                        return

    async def _snapshot(self, result: Any, decoder: StreamDecoder) -> Segment:
        """A task read with get, as the events it adds to what was passed on (it has ended)."""
        for item in decoder.decode(v1.StreamResponse(task=self._standard_task(result)), final=True):
            yield item

    def _decoded(self, event: SSEEvent, decoder: StreamDecoder) -> list[StreamItem]:
        """The items of one event; an error event fails the call, an event that cannot be read is a RawLine."""
        try:
            answer = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return [RawLine(event.data)]
        result = self._event_result(event, answer)
        try:
            response, final = self._stream_response(result)
            return list(decoder.decode(response, final=final))
        except (ValidationError, ValueError):
            return [RawLine(answer if isinstance(answer, dict) else event.data)]

    async def _fold(self, reads: AsyncIterator[StreamRead], decoder: StreamDecoder, on_task: OnTask | None) -> Task:
        """The final Task a stream amounts to: its last status, its artifacts merged, what its events cost."""
        task: Task | None = None
        cost = 0.0
        handoff: dict[str, Any] | None = None
        fold = ArtifactFold()
        async for read in reads:
            for item in items_of(read):
                if isinstance(item, OversizedLine | StreamTooLarge):
                    limit = "max_line_bytes" if isinstance(item, OversizedLine) else "max_stream_bytes"
                    raise PeerProtocolError(
                        f"{self.uri} sent more than {item.limit} bytes ({limit})", reason="bad_answer"
                    )
                if not isinstance(item, StatusEvent | ArtifactEvent | HandoffEvent):
                    continue
                if task is None:
                    task = Task(id=item.id, session_id=decoder.context_id, status=TaskStatus(state=TaskState.WORKING))
                    if on_task is not None:
                        on_task(item.id)
                cost += item.cost_usd or 0.0
                if isinstance(item, ArtifactEvent):
                    fold.add(item.artifact)
                elif isinstance(item, HandoffEvent):
                    handoff = item.handoff.to_wire()
                else:
                    task.status = item.status
                    if item.final:
                        task.artifacts = fold.artifacts
                        task.metadata = {"cost_usd": cost, **({"handoff": handoff} if handoff else {})}
                        return task
        raise PeerProtocolError(f"the stream from {self.uri} ended without a final event", reason="cut_off")

    # -- requests --------------------------------------------------------------------------

    async def _call(
        self, operation: str, params: dict[str, Any], *, short: bool = False, on_sent: OnSent | None = None
    ) -> Any:
        """One request; its result (an error answer raises the peer's error)."""
        outgoing = self._request(operation, params)
        try:
            content = await self._exchange(outgoing.method, outgoing.path, outgoing.body, short=short, on_sent=on_sent)
        except PeerHTTPError as exc:
            raise self._failure(exc) from None
        return self._result(content)

    def _send_result(self, result: Any) -> Task:
        """A send's answer: the task, or a direct message as the completed task it amounts to."""
        try:
            message, standard = self._send_answer(result)
            if message is not None:
                return reply_task(message)
            assert standard is not None
            return task_from_v1(standard)
        except (ValidationError, ValueError) as exc:
            raise self._not_a_task(exc) from None

    def _task(self, result: Any) -> Task:
        try:
            return task_from_v1(self._standard_task(result))
        except ValueError as exc:
            raise self._not_a_task(exc) from None

    def _not_a_task(self, exc: Exception) -> PeerProtocolError:
        return PeerProtocolError(f"{self.uri} answered something that is not a task: {exc}", reason="bad_answer")

    def _json(self, content: bytes | bytearray) -> Any:
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise PeerProtocolError(
                f"{self.uri} answered something that is not JSON: {exc}", reason="bad_answer"
            ) from None
