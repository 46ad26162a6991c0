"""A standard A2A agent over gRPC (A2A 1.0's ``A2AService``), for an agent whose card offers nothing the gateway
prefers (discovery.py).

Loaded only when such an agent is first called: grpcio and the a2a-sdk's generated stubs
are the ``grpc`` extra (docs/a2a.md). The requests and answers go through the same v1.0
models as JSON-RPC, by ProtoJSON (``ParseDict`` / ``MessageToDict``), and streams through
the same decoder, budget, resume and fold (protocol/a2a/streams.py, streams.py); the calls
are those of every standard binding (standard.py).

- ``subscribe``: ``SendStreamingMessage``; a stream cut before its end (the connection
  broke, or the stream ended early) is picked up by ``SubscribeToTask``, or read once with
  ``GetTask`` when the task ended meanwhile (``FAILED_PRECONDITION``, UnsupportedOperation).
- Every call carries ``a2a-version: 1.0`` and, when the peer has a token,
  ``authorization: Bearer <token>``. One channel per agent, opened on first use and closed
  with the gateway (``aclose``).
- Limits: the first message of a stream must come within ``headers_timeout_s``, after which
  the caller's idle timeout takes over; cancel and get answer within ``headers_timeout_s``;
  a stream message is at most ``max_line_bytes``, a stream ``max_stream_bytes`` in all, an
  answer ``max_answer_bytes``.
- Errors: a status carrying an A2A ``ErrorInfo`` is a ``PeerRPCError`` with that error's
  code; ``UNAVAILABLE`` a ``PeerConnectionError``; ``UNAUTHENTICATED`` and
  ``PERMISSION_DENIED`` a ``PeerHTTPError`` 401 / 403, as over HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import grpc
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2
from pydantic import ValidationError

from agent_server.bindings.grpc import STATUS_DETAILS_KEY
from agent_server.bindings.grpc_text import text_update_of
from gateway.errors import (
    AgentToolError,
    AgentToolTimeout,
    PeerConnectionError,
    PeerHTTPError,
    PeerProtocolError,
    PeerRPCError,
)
from gateway.peers.base import OnSent, RawLine, StreamItem
from gateway.peers.limits import PeerLimits
from gateway.peers.standard import Reading, StandardPeer, TaskOperation
from gateway.peers.streams import Segment, text_line
from protocol import A2A_V1, GRPC_BINDING, AgentCard, ErrorCode, OversizedLine, TaskSendParams
from protocol.a2a import VERSION_HEADER, StreamDecoder, send_request_to_v1, v1
from protocol.a2a.errors import CODE_OF_REASON, ERROR_DOMAIN
from protocol.hop_limits import EXTENSIONS_HEADER, HOP_LIMITS_EXTENSION

GRPC = "grpc-1.0"

_CODE_WITHOUT_INFO = {
    grpc.StatusCode.INVALID_ARGUMENT: ErrorCode.INVALID_PARAMS,
    grpc.StatusCode.NOT_FOUND: ErrorCode.TASK_NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION: ErrorCode.UNSUPPORTED_OPERATION,
    grpc.StatusCode.UNIMPLEMENTED: ErrorCode.METHOD_NOT_FOUND,
}
"""What a status without an A2A ErrorInfo means, by the specification's table read backwards; otherwise internal."""
_HTTP_STATUS = {grpc.StatusCode.UNAUTHENTICATED: 401, grpc.StatusCode.PERMISSION_DENIED: 403}


class GrpcPeer(StandardPeer):
    """The agent at ``target`` (``host:port``, on the host it was registered at), over TLS when ``secure``."""

    binding = GRPC
    version = A2A_V1

    def __init__(
        self,
        uri: str,
        target: str,
        card: AgentCard,
        limits: PeerLimits,
        *,
        token: str | None = None,
        secure: bool = False,
    ) -> None:
        self.uri = uri
        self.target = target
        self.limits = limits
        self._card = card
        self._secure = secure
        self._tenant = next(
            (i.tenant for i in card.interfaces() if i.protocol_binding == GRPC_BINDING and i.tenant), ""
        )
        """What every request names when the card's gRPC interface is one agent of several at its endpoint."""
        auth = (("authorization", f"Bearer {token}"),) if token else ()
        extensions = ((EXTENSIONS_HEADER.lower(), HOP_LIMITS_EXTENSION),)  # the deadline and budget it carries
        self._metadata = ((VERSION_HEADER.lower(), A2A_V1), *extensions, *auth)
        self._channel: Any = None
        self._stub: Any = None

    async def _send_once(self, params: TaskSendParams, on_sent: OnSent | None) -> Any:
        if on_sent is not None:
            on_sent()
        return json_format.MessageToDict(await self._unary("SendMessage", self._tenanted(_request(params))))

    async def _task_answer(self, operation: TaskOperation, task_id: str) -> Any:
        if operation == "cancel":
            request: Any = a2a_pb2.CancelTaskRequest(id=task_id, tenant=self._tenant)
            answer = await self._unary("CancelTask", request, short=True)
        else:
            answer = await self._unary("GetTask", a2a_pb2.GetTaskRequest(id=task_id, tenant=self._tenant), short=True)
        return json_format.MessageToDict(answer)

    def _tenanted(self, request: Any) -> Any:
        request.tenant = self._tenant
        return request

    async def aclose(self) -> None:
        channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            await channel.close()

    # -- streams ---------------------------------------------------------------------------

    async def _streamed(self, held: AsyncExitStack, params: TaskSendParams, reading: Reading) -> Segment:
        opening = self._open("SendStreamingMessage", self._tenanted(_request(params)), reading.on_sent)
        return self._events(*await held.enter_async_context(opening), reading)

    async def _resubscribed(self, held: AsyncExitStack, task_id: str, reading: Reading) -> Segment:
        opening = self._open("SubscribeToTask", a2a_pb2.SubscribeToTaskRequest(id=task_id, tenant=self._tenant))
        return self._events(*await held.enter_async_context(opening), reading)

    @asynccontextmanager
    async def _open(self, method: str, request: Any, on_sent: OnSent | None = None) -> AsyncIterator[tuple[Any, Any]]:
        """A server-streaming call and its first message, which must come within ``headers_timeout_s`` (a refusal
        is raised here); the call is cancelled when the block ends, so the server sees the client go away."""
        call = getattr(self._connected(), method)(request, metadata=self._metadata)
        if on_sent is not None:
            on_sent()
        try:
            try:
                with anyio.fail_after(self.limits.headers_timeout_s):
                    first = await call.read()
            except TimeoutError:
                seconds = self.limits.headers_timeout_s
                raise AgentToolTimeout(
                    f"{self.uri} sent nothing within {seconds:g} s of the call",
                    reason="headers_timeout",
                    seconds=seconds,
                ) from None
            except grpc.aio.AioRpcError as exc:
                raise self._error(exc) from None
            yield call, first
        finally:
            call.cancel()

    async def _events(self, call: Any, first: Any, reading: Reading) -> Segment:
        """One call's messages from ``first``, decoded as they arrive; the stream's last event, or a limit, ends it."""
        message = first
        try:
            while message is not grpc.aio.EOF:
                size = message.ByteSize()
                if size > self.limits.max_line_bytes:
                    yield OversizedLine(size=size, limit=self.limits.max_line_bytes)
                    return
                too_large = reading.budget.take(size)
                if too_large is not None:
                    yield too_large
                    return
                items = _decoded(message, reading.decoder)
                if items:
                    yield items
                if reading.decoder.final:
                    return
                message = await call.read()
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None

    # -- calls -----------------------------------------------------------------------------

    def _connected(self) -> Any:
        """The stub on this agent's channel, opened on first use (in the event loop that uses it)."""
        if self._stub is None:
            options = [
                ("grpc.max_receive_message_length", max(self.limits.max_answer_bytes, self.limits.max_line_bytes))
            ]
            self._channel = (
                grpc.aio.secure_channel(self.target, grpc.ssl_channel_credentials(), options=options)
                if self._secure
                else grpc.aio.insecure_channel(self.target, options=options)
            )
            self._stub = a2a_pb2_grpc.A2AServiceStub(self._channel)
        return self._stub

    async def _unary(self, method: str, request: Any, *, short: bool = False) -> Any:
        """One unary call's answer; ``short``: it must come within ``headers_timeout_s``."""
        timeout = self.limits.headers_timeout_s if short else None
        try:
            return await getattr(self._connected(), method)(request, metadata=self._metadata, timeout=timeout)
        except grpc.aio.AioRpcError as exc:
            raise self._error(exc) from None

    def _error(self, exc: Any) -> AgentToolError:
        """The gateway's error for a failed call: the A2A error its status names, else by its status code."""
        code = exc.code()
        message = exc.details() or code.name
        if code == grpc.StatusCode.UNAVAILABLE:
            return PeerConnectionError(f"{self.uri} ({self.target}) is unavailable over gRPC: {message}")
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            seconds = self.limits.headers_timeout_s
            return AgentToolTimeout(
                f"{self.uri} did not answer within {seconds:g} s", reason="timeout", seconds=seconds
            )
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "message larger than max" in message.lower():
            return PeerProtocolError(f"{self.uri} sent a message over the limit: {message}", reason="answer_too_large")
        if code in _HTTP_STATUS:
            return PeerHTTPError(_HTTP_STATUS[code], message)
        a2a_code = _a2a_code(exc.trailing_metadata()) or _CODE_WITHOUT_INFO.get(code, ErrorCode.INTERNAL_ERROR)
        return PeerRPCError(a2a_code, message, data={"grpcStatus": code.name})


def _request(params: TaskSendParams) -> Any:
    request = a2a_pb2.SendMessageRequest()
    json_format.ParseDict(send_request_to_v1(params).to_wire(), request, ignore_unknown_fields=True)
    return request


def _decoded(message: Any, decoder: StreamDecoder) -> list[StreamItem]:
    """The items of one StreamResponse; one that cannot be read is a RawLine of its ProtoJSON.

    A text chunk of the commonest shape is read by its fields (agent_server/bindings/grpc_text.py)
    as the ``TextLine`` the other peers make of one; every other message by ProtoJSON and the models.
    """
    update = text_update_of(message)
    if update is not None:
        return [text_line(update, decoder)]
    try:
        data = json_format.MessageToDict(message)
    except json_format.Error:  # a value ProtoJSON cannot write (an infinite number in metadata)
        return [RawLine(str(message))]
    try:
        return list(decoder.decode(v1.StreamResponse.model_validate(data)))
    except (ValidationError, ValueError):
        return [RawLine(data)]


def _a2a_code(trailing: Any) -> int | None:
    """The A2A error code a rich status (``grpc-status-details-bin``) names in its ErrorInfo, if it does."""
    for key, value in trailing or ():
        if key != STATUS_DETAILS_KEY:
            continue
        status = status_pb2.Status()
        status.ParseFromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.domain == ERROR_DOMAIN and info.reason in CODE_OF_REASON:
                return CODE_OF_REASON[info.reason]
    return None
