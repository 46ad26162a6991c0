"""What the standard peers over HTTP share (JSON-RPC, HTTP+JSON): requests through the one HTTP client, and
streams of Server-Sent Events read as the task model's events.

The operations themselves (send, subscribe, resume, cancel, get) are every standard
peer's (standard.py). A binding over HTTP says only how an operation goes on the wire
(``_request``: its HTTP method, path and body) and how an answer is read (``_result``,
``_event_result``, ``_failure``); the calls, the SSE streams and their limits are here.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import ValidationError

from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError
from gateway.peers.a2a_http import HttpPeer
from gateway.peers.base import OnSent, RawLine, StreamItem
from gateway.peers.http_client import PeerResponse
from gateway.peers.standard import Reading, StandardPeer, TaskOperation
from gateway.peers.streams import ByteBudget, Segment, text_line
from protocol import OversizedEvent, OversizedLine, SSEDecoder, SSEEvent, TaskSendParams
from protocol.a2a import StreamDecoder, send_request_to_v1, v1
from protocol.a2a.text_updates import read_text_update
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE


@dataclass(frozen=True)
class Outgoing:
    """One operation as its binding sends it; ``name``, how errors call it (``SendMessage``, ``POST /message:send``)."""

    method: str
    path: str
    body: bytes | None
    name: str


class SsePeer(StandardPeer, HttpPeer):
    """A standard A2A agent at its card's interface URL (on the host it was registered at), streaming over SSE."""

    # -- what a binding says ---------------------------------------------------------------

    @abc.abstractmethod
    def _request(self, operation: str, params: dict[str, Any]) -> Outgoing:
        """``operation`` (``send``, ``stream``, ``subscribe``, ``get``, ``cancel``) on the wire; the ``params`` of the
        last three are ``{"id": task_id}``."""

    @abc.abstractmethod
    def _result(self, content: bytes | bytearray) -> Any:
        """An answer's JSON result; an error answer raises the peer's error."""

    @abc.abstractmethod
    def _event_result(self, event: SSEEvent, answer: Any) -> Any:
        """A stream event's JSON result; an error event raises the peer's error."""

    def _failure(self, error: PeerHTTPError) -> AgentToolError:
        """An error status as the binding means it (the HTTP+JSON peer reads the A2A code from its body)."""
        return error

    def _stream_response(self, result: Any) -> tuple[v1.StreamResponse, bool]:
        """A stream event as v1.0 and whether it ends the stream whatever its state; ValidationError if unreadable."""
        return v1.StreamResponse.model_validate(result), False

    def _send_params(self, params: TaskSendParams) -> dict[str, Any]:
        return send_request_to_v1(params).to_wire()

    @property
    def _reads_text_updates(self) -> bool:
        """Whether stream events are v1.0's, whose text chunks ``read_text_update`` reads (v0.3's are not)."""
        return True

    # -- StandardPeer's calls --------------------------------------------------------------

    async def _send_once(self, params: TaskSendParams, on_sent: OnSent | None) -> Any:
        return await self._call("send", self._send_params(params), on_sent=on_sent)

    async def _task_answer(self, operation: TaskOperation, task_id: str) -> Any:
        return await self._call(operation, {"id": task_id}, short=True)

    async def _streamed(self, held: AsyncExitStack, params: TaskSendParams, reading: Reading) -> Segment:
        opening = self._open_sse("stream", self._send_params(params), reading.on_sent)
        return self._events(await held.enter_async_context(opening), reading.decoder, reading.budget)

    async def _resubscribed(self, held: AsyncExitStack, task_id: str, reading: Reading) -> Segment:
        response = await held.enter_async_context(self._open_sse("subscribe", {"id": task_id}))
        return self._events(response, reading.decoder, reading.budget)

    # -- streams ---------------------------------------------------------------------------

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
        """One response's events, decoded as they arrive, the items of each read in one list (recorded together,
        as the NDJSON peer's); the stream's last event, or a limit, ends it."""
        sse = SSEDecoder(self.limits.max_line_bytes)
        async with aclosing(budget.chunks(response.chunks())) as chunks:
            async for chunk in chunks:
                if not isinstance(chunk, bytes):  # past max_stream_bytes: the StreamTooLarge that ends it
                    yield chunk
                    return
                items: list[StreamItem] = []
                ended = False
                for event in sse.feed(chunk):
                    if isinstance(event, OversizedEvent):
                        items.append(OversizedLine(size=event.size, limit=event.limit))
                        ended = True
                        break
                    try:
                        items.extend(self._decoded(event, decoder))
                    except AgentToolError:
                        if items:  # what came before the error event is passed on first
                            yield items
                        raise
                    if decoder.final:
                        ended = True
                        break
                if items:
                    yield items
                if ended:
                    return

    def _decoded(self, event: SSEEvent, decoder: StreamDecoder) -> list[StreamItem]:
        """The items of one event; an error event fails the call, an event that cannot be read is a RawLine.

        A text chunk of the commonest shape is read without models (``read_text_update``) as
        the ``TextLine`` the NDJSON peer makes of one; every other event through the models.
        """
        try:
            answer = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return [RawLine(event.data)]
        result = self._event_result(event, answer)
        if self._reads_text_updates and (update := read_text_update(result)) is not None:
            return [text_line(update, decoder)]
        try:
            response, final = self._stream_response(result)
            return list(decoder.decode(response, final=final))
        except (ValidationError, ValueError):
            return [RawLine(answer if isinstance(answer, dict) else event.data)]

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

    def _json(self, content: bytes | bytearray) -> Any:
        try:
            return orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise PeerProtocolError(
                f"{self.uri} answered something that is not JSON: {exc}", reason="bad_answer"
            ) from None
