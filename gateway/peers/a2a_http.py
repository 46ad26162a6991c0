"""A remote agent over the A2A-NDJSON binding, through the gateway's one pooled httpx client.

Deadlines (``PeerLimits``): waiting for a pooled connection is bounded by
``pool_timeout_s`` and reported as ``pool_exhausted``, never blamed on the agent;
connecting by ``connect_timeout_s``; a stream's response headers must arrive within
``headers_timeout_s`` of the request being written; after that there is no read timeout
here: the caller's per-chunk idle timeout takes its place. A sync ``/tasks/send`` has no
read timeout either: the caller's ``timeout_ms`` bounds it, from the moment the request is
written (``on_sent``).

Sizes: a JSON answer is read up to ``max_answer_bytes``, a card up to ``max_card_bytes``,
a stream up to ``max_stream_bytes`` in all (then ``StreamTooLarge`` ends it). Redirects are
not followed: a 3xx answer is a ``PeerRedirect`` naming where it pointed. The peer's token,
when it has one, goes in ``Authorization`` on its requests only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import orjson
from pydantic import ValidationError

from agent_server.telemetry import metrics
from gateway.errors import (
    AgentToolError,
    AgentToolTimeout,
    PeerConnectionError,
    PeerHTTPError,
    PeerProtocolError,
    PeerRedirect,
    PoolExhausted,
)
from gateway.telemetry import spans
from gateway.uri import A2AHttpTarget
from protocol import (
    AgentCard,
    DecodedLine,
    ErrorBody,
    MalformedLine,
    NDJSONDecoder,
    OversizedLine,
    SkippedBytes,
    Task,
    TaskSendParams,
    TaskState,
    parse_stream_event,
)
from protocol.ndjson import MEDIA_TYPE as NDJSON_MEDIA_TYPE

from .base import Peer, RawLine, StreamItem, StreamTooLarge
from .limits import PeerLimits

_JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}
_STREAM_HEADERS = {"content-type": "application/json", "accept": NDJSON_MEDIA_TYPE}
_MAX_ERROR_BODY = 64 * 1024

OnSent = Callable[[], None]
"""Called once the request has been written on a connection (the clock of a reply deadline starts)."""


@dataclass(frozen=True)
class HttpTimeouts:
    """The httpx timeouts of A2A requests, built once per gateway from its ``PeerLimits``.

    ``open``: wait for a pooled connection within ``pool_timeout_s``, connect within
    ``connect_timeout_s``, send the request within ``headers_timeout_s``, no read timeout (a
    stream's idle timeout or the call's ``timeout_ms`` bounds the wait); also the gateway's
    own client default. ``short``: the same plus a read timeout of ``headers_timeout_s``, for
    cancel, get and the card.
    """

    open: httpx.Timeout
    short: httpx.Timeout

    @classmethod
    def build(cls, limits: PeerLimits) -> HttpTimeouts:
        connect, headers, pool = limits.connect_timeout_s, limits.headers_timeout_s, limits.pool_timeout_s
        return cls(
            open=httpx.Timeout(connect=connect, read=None, write=headers, pool=pool),
            short=httpx.Timeout(connect=connect, read=headers, write=headers, pool=pool),
        )


class A2AHttpPeer(Peer):
    def __init__(
        self, target: A2AHttpTarget, client: httpx.AsyncClient, limits: PeerLimits, *, token: str | None = None
    ) -> None:
        self.uri = target.uri
        self.base_url = target.base_url
        self.limits = limits
        self._client = client
        self._timeouts = HttpTimeouts.build(limits)
        auth = {"authorization": f"Bearer {token}"} if token else {}
        self._json_headers = {**_JSON_HEADERS, **auth}
        self._stream_headers = {**_STREAM_HEADERS, **auth}

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None) -> Task:
        answer = await self._exchange("POST", "/tasks/send", params.to_json(), self._timeouts.open, on_sent=on_sent)
        return _task(answer, self.uri)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamItem]]:
        url = self.base_url + "/tasks/sendSubscribe"
        with spans.request("POST", url) as span:
            request = self._client.build_request(
                "POST",
                url,
                content=params.to_json(),
                headers=spans.propagated(self._stream_headers),
                timeout=self._timeouts.open,
            )
            response = await self._send_for_headers(request)
            spans.response(span, response.status_code)
            metrics.stream_opened("client")
            try:
                await self._refuse_failure(response)
                async with aclosing(self._lines(response)) as lines:
                    yield lines
            finally:
                metrics.stream_closed("client")
                await response.aclose()

    async def cancel(self, task_id: str) -> bool:
        try:
            answer = await self._exchange("POST", "/tasks/cancel", orjson.dumps({"id": task_id}), self._timeouts.short)
            return _task(answer, self.uri).status.state == TaskState.CANCELED
        except AgentToolError:
            return False

    async def get(self, task_id: str) -> Task:
        answer = await self._exchange("POST", "/tasks/get", orjson.dumps({"id": task_id}), self._timeouts.short)
        return _task(answer, self.uri)

    async def card(self) -> AgentCard:
        content = await self._exchange(
            "GET", "/.well-known/agent.json", None, self._timeouts.short, limit=self.limits.max_card_bytes
        )
        try:
            return AgentCard.model_validate(orjson.loads(content))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            raise PeerProtocolError(f"{self.uri} answered an invalid agent card: {exc}", reason="bad_answer") from None

    async def _exchange(
        self,
        method: str,
        path: str,
        body: bytes | None,
        timeout: httpx.Timeout,  # noqa: ASYNC109 - httpx's per-phase timeouts, not one deadline
        *,
        limit: int | None = None,
        on_sent: OnSent | None = None,
    ) -> bytearray:
        """One request; the answer's body, read only up to ``limit`` (default ``max_answer_bytes``)."""
        limit = limit or self.limits.max_answer_bytes
        url = self.base_url + path
        with spans.request(method, url) as span:
            request = self._client.build_request(
                method, url, content=body, headers=spans.propagated(self._json_headers), timeout=timeout
            )
            if on_sent is not None:
                request.extensions["trace"] = _when_written(on_sent)
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TransportError as exc:
                raise self._transport_error(exc, timeout) from exc
            spans.response(span, response.status_code)
            try:
                await self._refuse_failure(response)
                content = await _read_bounded(response, limit + 1)
            except httpx.TransportError as exc:
                raise self._transport_error(exc, timeout) from exc
            finally:
                await response.aclose()
        if len(content) > limit:
            raise PeerProtocolError(
                f"{self.uri} answered {method} {path} with more than {limit} bytes", reason="answer_too_large"
            )
        return content

    async def _send_for_headers(self, request: httpx.Request) -> httpx.Response:
        """Send a stream's request; its headers must come ``headers_timeout_s`` after it is written."""
        response: httpx.Response | None = None
        headers_timeout_s = self.limits.headers_timeout_s
        with anyio.CancelScope() as waiting:

            def written() -> None:
                waiting.deadline = anyio.current_time() + headers_timeout_s

            request.extensions["trace"] = _when_written(written)
            try:
                response = await self._client.send(request, stream=True)
            except httpx.TransportError as exc:
                raise self._transport_error(exc, self._timeouts.open) from exc
        if response is None:
            raise AgentToolTimeout(
                f"{self.uri} sent no response headers within {headers_timeout_s:g} s",
                reason="headers_timeout",
                seconds=headers_timeout_s,
            )
        return response

    async def _refuse_failure(self, response: httpx.Response) -> None:
        """An error status fails the call with the peer's own message; a redirect is reported, not followed."""
        if response.is_redirect:
            location = response.headers.get("location", "(no Location header)")
            raise PeerRedirect(response.status_code, location, self.uri)
        if response.status_code >= 400:
            raise _http_error(response.status_code, await _read_bounded(response, _MAX_ERROR_BODY))

    async def _lines(self, response: httpx.Response) -> AsyncGenerator[StreamItem, None]:
        """Decode the body as it arrives; an oversized line, or a stream past its total limit, ends it when seen."""
        limit = self.limits.max_stream_bytes
        received = 0
        decoder = NDJSONDecoder(self.limits.max_line_bytes)
        try:
            async with aclosing(response.aiter_raw()) as chunks:  # type: ignore[type-var]  # a generator underneath
                async for chunk in chunks:
                    received += len(chunk)
                    if received > limit:
                        yield StreamTooLarge(size=received, limit=limit)
                        return
                    for line in decoder.feed(chunk):
                        yield _item(line)
                        if isinstance(line, OversizedLine):
                            return
            for line in decoder.close():
                yield _item(line)
        except httpx.TransportError as exc:
            raise PeerConnectionError(f"the stream from {self.uri} broke: {_describe(exc)}") from exc

    def _transport_error(self, exc: httpx.TransportError, timeout: httpx.Timeout) -> AgentToolError:
        """The error for a failed request, naming the deadline (of ``timeout``, the one it ran under) that passed."""
        if isinstance(exc, httpx.PoolTimeout):
            return PoolExhausted(self.limits.max_connections, timeout.pool or 0.0, self.uri)
        if isinstance(exc, httpx.ConnectTimeout):
            seconds = timeout.connect or 0.0
            return AgentToolTimeout(
                f"could not connect to {self.uri} within {seconds:g} s", reason="connect_timeout", seconds=seconds
            )
        if isinstance(exc, httpx.WriteTimeout):
            seconds = timeout.write or 0.0
            return AgentToolTimeout(
                f"could not send the request to {self.uri} within {seconds:g} s",
                reason="headers_timeout",
                seconds=seconds,
            )
        if isinstance(exc, httpx.TimeoutException):
            seconds = timeout.read or 0.0
            return AgentToolTimeout(
                f"{self.uri} did not answer within {seconds:g} s", reason="timeout", seconds=seconds
            )
        return PeerConnectionError(f"cannot reach {self.uri}: {_describe(exc)}")


def _item(decoded: DecodedLine) -> StreamItem:
    if isinstance(decoded, OversizedLine | SkippedBytes):
        return decoded
    if isinstance(decoded, MalformedLine):
        return RawLine(decoded.text)
    try:
        return parse_stream_event(decoded)
    except ValidationError:
        return RawLine(decoded)


def _task(content: bytearray, uri: str) -> Task:
    try:
        return Task.model_validate(orjson.loads(content))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise PeerProtocolError(f"{uri} answered something that is not a task: {exc}", reason="bad_answer") from None


def _http_error(status: int, content: bytes | bytearray) -> PeerHTTPError:
    """The peer's own error message when it sent the binding's error body, else its text."""
    body: Any
    try:
        body = orjson.loads(content)
        detail = ErrorBody.model_validate(body).error
        return PeerHTTPError(status, detail.message, code=detail.code, body=body)
    except (orjson.JSONDecodeError, ValidationError):
        text = content[:2000].decode("utf-8", errors="replace").strip()
        return PeerHTTPError(status, text or "(empty body)", body=text)


def _when_written(callback: OnSent) -> Callable[[str, dict[str, Any]], Any]:
    """An httpcore ``trace`` hook calling ``callback`` when the request starts being written (a connection is held)."""

    async def trace(event: str, info: dict[str, Any]) -> None:
        if event.endswith("send_request_headers.started"):
            callback()

    return trace


async def _read_bounded(response: httpx.Response, limit: int) -> bytearray:
    """At most ``limit`` bytes of the (decoded) body; the rest is never read."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk[: limit - len(body)]
        if len(body) >= limit:
            break
    return body


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
