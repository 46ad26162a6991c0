"""A remote agent over the A2A-NDJSON binding, through the gateway's one HTTP client (http_client.py).

Deadlines (``PeerLimits``, kept by the client): waiting for a pooled connection is bounded
by ``pool_timeout_s`` (``pool_exhausted``), connecting by ``connect_timeout_s``, writing the
request by ``headers_timeout_s``; a stream's response headers must arrive within
``headers_timeout_s`` of the request being written, and after that there is no read timeout
here: the caller's per-chunk idle timeout takes its place. A sync ``/tasks/send`` has no read
timeout either: the caller's ``timeout_ms`` bounds it, from the moment the request is
written (``on_sent``). Cancel, get and the card wait at most ``headers_timeout_s`` of
silence for their answer.

Sizes: a JSON answer is read up to ``max_answer_bytes``, a card up to ``max_card_bytes``,
a stream up to ``max_stream_bytes`` in all (then ``StreamTooLarge`` ends it). Redirects are
not followed: a 3xx answer is a ``PeerRedirect`` naming where it pointed. The peer's token,
when it has one, goes in ``Authorization`` on its requests only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import orjson
from pydantic import ValidationError

from agent_server.telemetry import metrics
from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError
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
from .http_client import OnSent, PeerHttpClient, PeerResponse
from .limits import PeerLimits

_JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}
_STREAM_HEADERS = {"content-type": "application/json", "accept": NDJSON_MEDIA_TYPE}
_MAX_ERROR_BODY = 64 * 1024


class A2AHttpPeer(Peer):
    def __init__(
        self, target: A2AHttpTarget, client: PeerHttpClient, limits: PeerLimits, *, token: str | None = None
    ) -> None:
        self.uri = target.uri
        self.base_url = target.base_url
        self.limits = limits
        self._client = client
        auth = {"authorization": f"Bearer {token}"} if token else {}
        self._json_headers = {**_JSON_HEADERS, **auth}
        self._stream_headers = {**_STREAM_HEADERS, **auth}

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None) -> Task:
        answer = await self._exchange("POST", "/tasks/send", params.to_json(), on_sent=on_sent)
        return _task(answer, self.uri)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamItem]]:
        async with self._client.open(
            "POST",
            self.base_url + "/tasks/sendSubscribe",
            uri=self.uri,
            headers=self._stream_headers,
            body=params.to_json(),
            wait_headers=True,
        ) as response:
            await _refuse_failure(response)
            metrics.stream_opened("client")
            try:
                async with aclosing(self._lines(response)) as lines:
                    yield lines
            finally:
                metrics.stream_closed("client")

    async def cancel(self, task_id: str) -> bool:
        try:
            answer = await self._exchange("POST", "/tasks/cancel", orjson.dumps({"id": task_id}), short=True)
            return _task(answer, self.uri).status.state == TaskState.CANCELED
        except AgentToolError:
            return False

    async def get(self, task_id: str) -> Task:
        answer = await self._exchange("POST", "/tasks/get", orjson.dumps({"id": task_id}), short=True)
        return _task(answer, self.uri)

    async def card(self) -> AgentCard:
        content = await self._exchange(
            "GET", "/.well-known/agent.json", None, short=True, limit=self.limits.max_card_bytes
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
        *,
        short: bool = False,
        limit: int | None = None,
        on_sent: OnSent | None = None,
    ) -> bytearray:
        """One request; the answer's body, read only up to ``limit`` (default ``max_answer_bytes``).

        ``short``: the answer must come without a silence of ``headers_timeout_s`` (cancel, get, card).
        """
        limit = limit or self.limits.max_answer_bytes
        async with self._client.open(
            method,
            self.base_url + path,
            uri=self.uri,
            headers=self._json_headers,
            body=body,
            on_sent=on_sent,
            read_timeout_s=self.limits.headers_timeout_s if short else None,
        ) as response:
            await _refuse_failure(response)
            content = await response.read(limit + 1)
        if len(content) > limit:
            raise PeerProtocolError(
                f"{self.uri} answered {method} {path} with more than {limit} bytes", reason="answer_too_large"
            )
        return content

    async def _lines(self, response: PeerResponse) -> AsyncGenerator[StreamItem, None]:
        """Decode the body as it arrives; an oversized line, or a stream past its total limit, ends it when seen."""
        limit = self.limits.max_stream_bytes
        received = 0
        decoder = NDJSONDecoder(self.limits.max_line_bytes)
        async with aclosing(response.chunks()) as chunks:
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


async def _refuse_failure(response: PeerResponse) -> None:
    """An error status fails the call with the peer's own message (redirects are refused by the client)."""
    if response.status >= 400:
        raise _http_error(response.status, await response.read(_MAX_ERROR_BODY))


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
