"""A remote agent over the A2A-NDJSON binding, through the gateway's one pooled httpx client.

Deadlines: connecting is bounded by ``connect_timeout_s`` (httpx); a stream's response
headers must arrive within ``headers_timeout_s`` of sending the request; after that there
is no read timeout here: the caller's per-chunk idle timeout takes its place. A sync
``/tasks/send`` has no read timeout either: the caller's ``timeout_ms`` bounds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import orjson
from pydantic import ValidationError

from protocol import (
    NDJSON_MEDIA_TYPE,
    AgentCard,
    DecodedLine,
    ErrorBody,
    MalformedLine,
    OversizedLine,
    SkippedBytes,
    Task,
    TaskSendParams,
    TaskState,
    aiter_ndjson,
    parse_stream_event,
)

from ..errors import AgentToolTimeout, PeerConnectionError, PeerHTTPError, PeerProtocolError
from ..uri import A2AHttpTarget
from .base import Peer, RawLine, StreamItem

_JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}
_STREAM_HEADERS = {"content-type": "application/json", "accept": NDJSON_MEDIA_TYPE}
_MAX_ERROR_BODY = 64 * 1024
_MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""The largest JSON answer (a Task, a card) read from a peer; a bigger one fails the call."""


@dataclass(frozen=True)
class HttpTimeouts:
    """The httpx timeouts of A2A requests, built once per gateway from its deadlines.

    ``open``: connect within ``connect_timeout_s``, send the request within
    ``headers_timeout_s``, no read timeout (a stream's idle timeout or the call's
    ``timeout_ms`` bounds the wait); also the gateway's own client default. ``short``: the
    same plus a read timeout of ``headers_timeout_s``, for cancel, get and the card.
    """

    connect_timeout_s: float
    headers_timeout_s: float
    open: httpx.Timeout
    short: httpx.Timeout

    @classmethod
    def build(cls, *, connect_timeout_s: float, headers_timeout_s: float) -> HttpTimeouts:
        return cls(
            connect_timeout_s=connect_timeout_s,
            headers_timeout_s=headers_timeout_s,
            open=httpx.Timeout(connect=connect_timeout_s, read=None, write=headers_timeout_s, pool=None),
            short=httpx.Timeout(connect=connect_timeout_s, read=headers_timeout_s, write=headers_timeout_s, pool=None),
        )


class A2AHttpPeer(Peer):
    def __init__(
        self, target: A2AHttpTarget, client: httpx.AsyncClient, *, max_line_bytes: int, timeouts: HttpTimeouts
    ) -> None:
        self.uri = target.uri
        self.base_url = target.base_url
        self.max_line_bytes = max_line_bytes
        self.headers_timeout_s = timeouts.headers_timeout_s
        self._client = client
        self._open_timeout = timeouts.open
        self._short_timeout = timeouts.short

    async def send(self, params: TaskSendParams) -> Task:
        return _task(await self._post("/tasks/send", params.to_json(), self._open_timeout), self.uri)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamItem]]:
        request = self._client.build_request(
            "POST",
            self.base_url + "/tasks/sendSubscribe",
            content=params.to_json(),
            headers=_STREAM_HEADERS,
            timeout=self._open_timeout,
        )
        try:
            with anyio.fail_after(self.headers_timeout_s):
                response = await self._client.send(request, stream=True)
        except TimeoutError:
            raise AgentToolTimeout(
                f"{self.uri} sent no response headers within {self.headers_timeout_s:g} s",
                reason="headers_timeout",
                seconds=self.headers_timeout_s,
            ) from None
        except httpx.TransportError as exc:
            raise self._transport_error(exc, self._open_timeout) from exc
        try:
            if response.status_code >= 400:
                raise _http_error(response.status_code, await _read_bounded(response, _MAX_ERROR_BODY))
            async with aclosing(self._lines(response)) as lines:
                yield lines
        finally:
            await response.aclose()

    async def cancel(self, task_id: str) -> bool:
        try:
            answer = await self._post("/tasks/cancel", orjson.dumps({"id": task_id}), self._short_timeout)
            return _task(answer, self.uri).status.state == TaskState.CANCELED
        except (PeerHTTPError, PeerConnectionError, PeerProtocolError, AgentToolTimeout):
            return False

    async def get(self, task_id: str) -> Task:
        return _task(await self._post("/tasks/get", orjson.dumps({"id": task_id}), self._short_timeout), self.uri)

    async def card(self) -> AgentCard:
        content = await self._exchange("GET", "/.well-known/agent.json", None, self._short_timeout)
        try:
            return AgentCard.model_validate(orjson.loads(content))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            raise PeerProtocolError(f"{self.uri} answered an invalid agent card: {exc}", reason="bad_answer") from None

    async def _post(self, path: str, body: bytes, timeout: httpx.Timeout) -> bytearray:
        return await self._exchange("POST", path, body, timeout)

    async def _exchange(self, method: str, path: str, body: bytes | None, timeout: httpx.Timeout) -> bytearray:
        """One request; the answer's body, read only up to its limit (a peer cannot exhaust memory)."""
        try:
            async with self._client.stream(
                method, self.base_url + path, content=body, headers=_JSON_HEADERS, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    raise _http_error(response.status_code, await _read_bounded(response, _MAX_ERROR_BODY))
                content = await _read_bounded(response, _MAX_ANSWER_BYTES + 1)
        except httpx.TransportError as exc:
            raise self._transport_error(exc, timeout) from exc
        if len(content) > _MAX_ANSWER_BYTES:
            raise PeerProtocolError(
                f"{self.uri} answered {method} {path} with more than {_MAX_ANSWER_BYTES} bytes", reason="answer_too_large"
            )
        return content

    async def _lines(self, response: httpx.Response) -> AsyncIterator[StreamItem]:
        """Decode the body as it arrives; a line growing past the limit is reported before it ends (and ends the stream)."""
        try:
            async with (
                aclosing(response.aiter_raw()) as chunks,
                aclosing(aiter_ndjson(chunks, self.max_line_bytes)) as decoded,
            ):
                async for line in decoded:
                    yield _item(line)
                    if isinstance(line, OversizedLine):
                        return
        except httpx.TransportError as exc:
            raise PeerConnectionError(f"the stream from {self.uri} broke: {_describe(exc)}") from exc

    def _transport_error(self, exc: httpx.TransportError, timeout: httpx.Timeout) -> AgentToolTimeout | PeerConnectionError:
        """The error for a failed request, naming the deadline (of ``timeout``, the one it ran under) that passed."""
        if isinstance(exc, httpx.ConnectTimeout):
            seconds = timeout.connect or 0.0
            return AgentToolTimeout(
                f"could not connect to {self.uri} within {seconds:g} s", reason="connect_timeout", seconds=seconds
            )
        if isinstance(exc, httpx.WriteTimeout):
            seconds = timeout.write or 0.0
            return AgentToolTimeout(
                f"could not send the request to {self.uri} within {seconds:g} s", reason="headers_timeout", seconds=seconds
            )
        if isinstance(exc, httpx.PoolTimeout):
            seconds = timeout.pool or 0.0
            return AgentToolTimeout(
                f"no free connection to {self.uri} within {seconds:g} s (HTTP pool full)", reason="timeout", seconds=seconds
            )
        if isinstance(exc, httpx.TimeoutException):
            seconds = timeout.read or 0.0
            return AgentToolTimeout(f"{self.uri} did not answer within {seconds:g} s", reason="timeout", seconds=seconds)
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
