"""A remote agent over HTTP, through the gateway's one HTTP client (http_client.py): what every HTTP binding
shares (``HttpPeer``), and Switchboard's own A2A-NDJSON binding (``A2AHttpPeer``; JSON-RPC is jsonrpc.py).

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

A stream cut before its final line (the connection broke, or the body ended) is picked up
again, at most ``max_resubscribes`` times per call: over NDJSON by ``/tasks/resubscribe``
after the last seq received, so nothing is lost or read twice; the stream then carries a
``Resubscribed`` item where it was resumed. Each response is held open (with its connection
slot) only while its own part of the stream is read.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, asynccontextmanager
from dataclasses import dataclass
from types import NoneType
from typing import Any

import orjson
from pydantic import ValidationError

from agent_server.telemetry import metrics
from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError
from gateway.peers.base import (
    OnSent,
    OnTask,
    Peer,
    RawLine,
    Received,
    StreamItem,
    StreamRead,
    StreamTooLarge,
    TextLine,
)
from gateway.peers.http_client import PeerHttpClient, PeerResponse
from gateway.peers.limits import PeerLimits
from gateway.peers.streams import ByteBudget, Segment, ends_stream, resumed
from gateway.uri import A2AHttpTarget
from protocol import (
    AgentCard,
    ArtifactEvent,
    DecodedLine,
    ErrorBody,
    HandoffEvent,
    NDJSONDecoder,
    OversizedLine,
    ProtocolError,
    SkippedBytes,
    StatusEvent,
    Task,
    TaskSendParams,
    TaskState,
    parse_stream_event,
)
from protocol.hop_limits import EXTENSIONS_HEADER, HOP_LIMITS_EXTENSION
from protocol.ndjson import MEDIA_TYPE as NDJSON_MEDIA_TYPE

_JSON_HEADERS = {"content-type": "application/json", "accept": "application/json"}
_STREAM_HEADERS = {"content-type": "application/json", "accept": NDJSON_MEDIA_TYPE}
_MAX_ERROR_BODY = 64 * 1024
NDJSON = "a2a-ndjson"
CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"

_EVENTS = (TextLine, StatusEvent, ArtifactEvent, HandoffEvent)
_TEXT_CHUNK_KEYS = frozenset({"seq", "id", "cost_usd", "final", "type", "artifact"})
_TEXT_ARTIFACT_KEYS = frozenset({"parts", "index", "append"})


@dataclass
class _Place:
    """Where an NDJSON stream is: its task, the seq of the last line passed on, whether that was the final one."""

    task_id: str | None
    seq: int = -1
    final: bool = False

    def passed(self, item: StreamItem) -> None:
        if isinstance(item, _EVENTS):
            self.task_id = self.task_id or item.id
            self.seq = item.seq
            self.final = isinstance(item, StatusEvent) and item.final


class HttpPeer(Peer):
    """What every peer over HTTP shares: the one client and its deadlines, bounded answers, refusals, resumes.

    ``base_url`` is where the binding is spoken; ``headers`` and ``stream_headers`` go with
    every JSON request and stream (the peer's token added, for this agent only), and so does the
    ``A2A-Extensions`` header naming the deadline and budget every request carries (protocol/hop_limits.py).
    """

    def __init__(
        self,
        uri: str,
        base_url: str,
        client: PeerHttpClient,
        limits: PeerLimits,
        *,
        headers: dict[str, str],
        stream_headers: dict[str, str],
        token: str | None = None,
    ) -> None:
        self.uri = uri
        self.base_url = base_url
        self.limits = limits
        self._client = client
        auth = {"authorization": f"Bearer {token}"} if token else {}
        extensions = {EXTENSIONS_HEADER: HOP_LIMITS_EXTENSION}
        self._json_headers = {**headers, **extensions, **auth}
        self._stream_headers = {**stream_headers, **extensions, **auth}

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

    @asynccontextmanager
    async def _open_stream(self, path: str, body: bytes, on_sent: OnSent | None = None) -> AsyncIterator[PeerResponse]:
        """A stream's response, its status checked (an error status fails with the peer's message)."""
        async with self._client.open(
            "POST",
            self.base_url + path,
            uri=self.uri,
            headers=self._stream_headers,
            body=body,
            on_sent=on_sent,
            wait_headers=True,
        ) as response:
            await _refuse_failure(response)
            metrics.stream_opened("client")
            try:
                yield response
            finally:
                metrics.stream_closed("client")


class A2AHttpPeer(HttpPeer):
    """An agent over Switchboard's own binding: one path per method, NDJSON streams, ids chosen by the caller."""

    binding = NDJSON

    def __init__(
        self, target: A2AHttpTarget, client: PeerHttpClient, limits: PeerLimits, *, token: str | None = None
    ) -> None:
        super().__init__(
            target.uri,
            target.base_url,
            client,
            limits,
            headers=_JSON_HEADERS,
            stream_headers=_STREAM_HEADERS,
            token=token,
        )

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        answer = await self._exchange("POST", "/tasks/send", params.to_json(), on_sent=on_sent)
        return _task(answer, self.uri)

    def subscribe(self, params: TaskSendParams) -> AbstractAsyncContextManager[AsyncIterator[StreamRead]]:
        return self._followed("/tasks/sendSubscribe", params.to_json(), _Place(task_id=params.id))

    def resubscribe(
        self, task_id: str, after_seq: int, received: Received | None = None
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamRead]]:
        body = orjson.dumps({"id": task_id, "afterSeq": after_seq})
        return self._followed("/tasks/resubscribe", body, _Place(task_id=task_id, seq=after_seq))

    @asynccontextmanager
    async def _followed(self, path: str, body: bytes, place: _Place) -> AsyncIterator[AsyncIterator[StreamRead]]:
        """The stream ``path`` opens, picked up by ``/tasks/resubscribe`` where it breaks before its final line."""
        budget = ByteBudget(self.limits.max_stream_bytes)

        async def resume(held: AsyncExitStack) -> Segment | None:
            if place.task_id is None:
                return None
            body = orjson.dumps({"id": place.task_id, "afterSeq": place.seq})
            response = await held.enter_async_context(self._open_stream("/tasks/resubscribe", body))
            return self._lines(response, place, budget)

        async with AsyncExitStack() as held:
            response = await held.enter_async_context(self._open_stream(path, body))
            segment = self._lines(response, place, budget)
            async with aclosing(resumed(segment, held, resume, self.limits.max_resubscribes)) as items:
                yield items

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
        """The card at ``/.well-known/agent-card.json``, else (404) at ``agent.json``, where older agents serve it."""
        try:
            content = await self._card_at(CARD_PATH)
        except PeerHTTPError as exc:
            if exc.status != 404:
                raise
            content = await self._card_at(LEGACY_CARD_PATH)
        try:
            return AgentCard.model_validate(orjson.loads(content))
        except orjson.JSONDecodeError as exc:
            message = f"{self.uri} answered an agent card that is not JSON: {exc}"
            raise PeerProtocolError(message, reason="bad_answer") from None
        except ValidationError as exc:
            problems = ProtocolError.from_validation_error(exc, "agent card").message
            raise PeerProtocolError(f"{self.uri} answered an {problems}", reason="bad_answer") from None

    async def _card_at(self, path: str) -> bytearray:
        return await self._exchange("GET", path, None, short=True, limit=self.limits.max_card_bytes)

    async def _lines(self, response: PeerResponse, place: _Place, budget: ByteBudget) -> Segment:
        """Decode one response's body as it arrives, the lines of each read in one list; an oversized line, or a
        stream past its limit, ends it."""
        decoder = NDJSONDecoder(self.limits.max_line_bytes)
        async with aclosing(budget.chunks(response.chunks())) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, StreamTooLarge):
                    yield chunk
                    return
                items = _items(decoder.feed(chunk), place)
                del chunk  # decoded: an idle stream holds neither it nor its items while the next is awaited
                if items:
                    yield items
                    if ends_stream(items):
                        return
                del items
        items = _items(decoder.close(), place)
        if items:
            yield items


async def _refuse_failure(response: PeerResponse) -> None:
    """An error status fails the call with the peer's own message (redirects are refused by the client)."""
    if response.status >= 400:
        raise _http_error(response.status, await response.read(_MAX_ERROR_BODY))


def _items(lines: list[DecodedLine], place: _Place) -> list[StreamItem]:
    """The items of the lines decoded together, up to the first that ends the stream; ``place`` moved to the last."""
    items: list[StreamItem] = []
    last: StreamItem | None = None
    for line in lines:
        # most lines: a text line, read here rather than in one more call, and never final (no isinstance of a
        # pydantic model to fail)
        chunk = _text_chunk(line) if type(line) is dict else None
        if chunk is not None:
            items.append(chunk)
            last = chunk
            continue
        item = _other_item(line)
        items.append(item)
        if isinstance(item, _EVENTS):
            last = item
            if isinstance(item, StatusEvent) and item.final:
                break
        elif isinstance(item, OversizedLine):
            break
    if last is not None:
        place.passed(last)
    return items


def _other_item(decoded: DecodedLine) -> StreamItem:
    """A line that is not a ``TextLine`` (``_text_chunk`` refused it) as the item it stands for."""
    if isinstance(decoded, dict):
        try:
            return parse_stream_event(decoded)
        except ValidationError:
            return RawLine(decoded)
    if isinstance(decoded, OversizedLine | SkippedBytes):
        return decoded
    return RawLine(decoded.text)


def _text_chunk(line: dict[str, Any]) -> TextLine | None:
    """The line as a ``TextLine`` when it is an artifact line of one plain text part with no other field; None
    for any other line, left to ``parse_stream_event``.

    Every value is checked for its exact JSON type, stricter than pydantic (an integer cost, say, is left to
    it), so a line taken here is one ``parse_stream_event`` accepts, and reads the same
    (``tests/gateway/peers/test_text_lines.py``). The cost must be finite and >= 0, as the call checks it.
    """
    # A key that must be there is read by subscript (fewer calls than ``get``): missing, it refuses the line.
    try:
        if line["type"] != "artifact" or not line.keys() <= _TEXT_CHUNK_KEYS:
            return None
        seq, task_id, artifact = line["seq"], line["id"], line["artifact"]
        if type(seq) is not int or seq < 0 or type(task_id) is not str or line.get("final", False) is not False:
            return None
        cost = line.get("cost_usd")
        if cost is not None and (type(cost) is not float or not 0.0 <= cost < math.inf):
            return None
        if type(artifact) is not dict or not artifact.keys() <= _TEXT_ARTIFACT_KEYS:
            return None
        parts, index, append = artifact["parts"], artifact.get("index", 0), artifact.get("append")
        if type(parts) is not list or len(parts) != 1 or type(index) is not int or type(append) not in (bool, NoneType):
            return None
        part = parts[0]
        if type(part) is not dict or len(part) != 2 or part["type"] != "text" or type(text := part["text"]) is not str:
            return None
    except KeyError:
        return None
    return TextLine(seq, task_id, cost, index, append, text)


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
