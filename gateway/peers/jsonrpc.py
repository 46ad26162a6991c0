"""A standard A2A agent over the JSON-RPC binding (v1.0, or v0.3), through the same HTTP client as the NDJSON one.

Each request is a JSON-RPC 2.0 POST to the card's interface URL with ``A2A-Version``;
streams are Server-Sent Events, each ``data:`` a JSON-RPC response, read as the task
model's events by the one stream mapping (protocol/a2a/streams.py). What a call does with
them (send, subscribe, cancel, get) is the same on every standard binding (standard.py).

- ``subscribe``: ``SendStreamingMessage`` / ``message/stream``, resumed by
  ``SubscribeToTask`` / ``tasks/resubscribe``.
- ``send``: ``SendMessage`` / ``message/send``, or the stream folded; ``cancel``:
  ``CancelTask`` / ``tasks/cancel``; ``get``: ``GetTask`` / ``tasks/get``.

A JSON-RPC error answer is a ``PeerRPCError`` with the peer's code and message.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from typing import Any

import orjson
from pydantic import ValidationError

from gateway.errors import PeerProtocolError, PeerRPCError
from gateway.peers.a2a_http import HttpPeer
from gateway.peers.base import OnSent, RawLine, StreamItem
from gateway.peers.http_client import PeerHttpClient, PeerResponse
from gateway.peers.limits import PeerLimits
from gateway.peers.standard import V03_RESULT, Reading, StandardPeer, TaskOperation
from gateway.peers.streams import ByteBudget, Segment
from protocol import (
    A2A_V1,
    AgentCard,
    ErrorCode,
    OversizedEvent,
    OversizedLine,
    SSEDecoder,
    SSEEvent,
    TaskSendParams,
)
from protocol.a2a import VERSION_HEADER, StreamDecoder, send_request_to_v1, v03, v1
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE

_METHODS = {
    A2A_V1: {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "subscribe": "SubscribeToTask",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "0.3": {
        "send": "message/send",
        "stream": "message/stream",
        "subscribe": "tasks/resubscribe",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
}


class JsonRpcPeer(StandardPeer, HttpPeer):
    """The agent at ``url`` (its card's JSON-RPC interface, on the host it was registered at), speaking ``version``."""

    def __init__(
        self,
        uri: str,
        url: str,
        version: str,
        card: AgentCard,
        client: PeerHttpClient,
        limits: PeerLimits,
        *,
        token: str | None = None,
    ) -> None:
        headers = {"content-type": "application/json", "accept": "application/json", VERSION_HEADER: version}
        stream_headers = {**headers, "accept": SSE_MEDIA_TYPE}
        super().__init__(uri, url, client, limits, headers=headers, stream_headers=stream_headers, token=token)
        self.version = version
        self.binding = f"jsonrpc-{version}"
        self._card = card
        self._methods = _METHODS[version]

    async def _send_once(self, params: TaskSendParams, on_sent: OnSent | None) -> Any:
        return await self._call("send", self._send_params(params), on_sent=on_sent)

    async def _task_answer(self, operation: TaskOperation, task_id: str) -> Any:
        return await self._call(operation, {"id": task_id}, short=True)

    # -- streams ---------------------------------------------------------------------------

    async def _streamed(self, held: AsyncExitStack, params: TaskSendParams, reading: Reading) -> Segment:
        opening = self._open_sse("stream", self._send_params(params), reading.on_sent)
        return self._events(await held.enter_async_context(opening), reading.decoder, reading.budget)

    async def _resubscribed(self, held: AsyncExitStack, task_id: str, reading: Reading) -> Segment:
        response = await held.enter_async_context(self._open_sse("subscribe", {"id": task_id}))
        return self._events(response, reading.decoder, reading.budget)

    @asynccontextmanager
    async def _open_sse(
        self, method: str, params: dict[str, Any], on_sent: OnSent | None = None
    ) -> AsyncIterator[PeerResponse]:
        """A stream's response; a JSON answer instead of events is the peer's error (PeerRPCError)."""
        async with self._open_stream("", self._request(method, params), on_sent) as response:
            if response.headers.get("content-type", "").split(";")[0].strip() == SSE_MEDIA_TYPE:
                yield response
                return
            content = await response.read(self.limits.max_answer_bytes)
        self._result(content)
        raise PeerProtocolError(f"{self.uri} answered {self._methods[method]} without a stream", reason="bad_answer")

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

    def _decoded(self, event: SSEEvent, decoder: StreamDecoder) -> list[StreamItem]:
        """The items of one event; an error event fails the call, an event that cannot be read is a RawLine."""
        try:
            answer = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return [RawLine(event.data)]
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            raise _rpc_error(answer["error"])
        result = answer.get("result") if isinstance(answer, dict) else None
        try:
            if self.version == A2A_V1:
                return list(decoder.decode(v1.StreamResponse.model_validate(result)))
            legacy = V03_RESULT.validate_python(result)
            final = isinstance(legacy, v03.TaskStatusUpdateEvent) and legacy.final
            return list(decoder.decode(v03.result_to_v1(legacy), final=final))
        except (ValidationError, ValueError):
            return [RawLine(answer if isinstance(answer, dict) else event.data)]

    # -- requests --------------------------------------------------------------------------

    async def _call(
        self, method: str, params: dict[str, Any], *, short: bool = False, on_sent: OnSent | None = None
    ) -> Any:
        """One JSON-RPC request; its ``result`` (an error answer raises PeerRPCError)."""
        content = await self._exchange("POST", "", self._request(method, params), short=short, on_sent=on_sent)
        return self._result(content)

    def _request(self, method: str, params: dict[str, Any]) -> bytes:
        call = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": self._methods[method], "params": params}
        return orjson.dumps(call)

    def _result(self, content: bytes | bytearray) -> Any:
        try:
            answer = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise PeerProtocolError(
                f"{self.uri} answered something that is not JSON: {exc}", reason="bad_answer"
            ) from None
        if not isinstance(answer, dict) or ("result" not in answer and not isinstance(answer.get("error"), dict)):
            raise PeerProtocolError(
                f"{self.uri} answered something that is not a JSON-RPC response", reason="bad_answer"
            )
        if "error" in answer and isinstance(answer["error"], dict):
            raise _rpc_error(answer["error"])
        return answer["result"]

    def _send_params(self, params: TaskSendParams) -> dict[str, Any]:
        request = send_request_to_v1(params)
        return request.to_wire() if self.version == A2A_V1 else v03.send_params_from_v1(request).to_wire()


def _rpc_error(error: dict[str, Any]) -> PeerRPCError:
    code = error.get("code")
    message = error.get("message")
    return PeerRPCError(
        code if isinstance(code, int) and not isinstance(code, bool) else ErrorCode.INTERNAL_ERROR,
        message if isinstance(message, str) else "(no message)",
        data=error.get("data"),
    )
