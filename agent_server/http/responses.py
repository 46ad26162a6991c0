"""HTTP plumbing shared by the agent server and the gateway service: content types, bounded
body reading, JSON, NDJSON and SSE answers, the agent card's caching, error bodies."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from functools import wraps
from typing import Any

import anyio
import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from agent_server.http.limits import CARD_MAX_AGE_S
from protocol import Envelope, EnvelopedProtocolError, ErrorCode, ProtocolError
from protocol.ndjson import MEDIA_TYPE as NDJSON_MEDIA_TYPE
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE

JSON_MEDIA_TYPE = "application/json"

Endpoint = Callable[[Request], Awaitable[Response]]


def check_content_type(request: Request) -> None:
    """JSON bodies only: ``application/json`` or any ``application/*+json``, said in the header.

    A body without the header is refused too: a web page can send one to any origin
    without asking first (browsers.py), a JSON-typed one it cannot.
    """
    raw = request.headers.get("content-type")
    media_type = (raw or "").split(";", 1)[0].strip().lower()
    if media_type == JSON_MEDIA_TYPE or (media_type.startswith("application/") and media_type.endswith("+json")):
        return
    said = f"content type {media_type!r} is" if media_type else "a body without a Content-Type header is"
    raise ProtocolError(
        ErrorCode.CONTENT_TYPE_NOT_SUPPORTED,
        f"{said} not supported; send the JSON body with 'Content-Type: application/json'",
        http_status=415,
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The request body; 413 once it is known to exceed ``limit`` bytes, 400 if the client leaves mid-body."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ProtocolError(ErrorCode.INVALID_REQUEST, f"bad Content-Length header: {declared!r}") from None
        if size > limit:
            raise _too_large(limit)
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise _too_large(limit)
    except ClientDisconnect:
        # a client that stops halfway is not the server failing: no 500, no traceback in the log
        raise ProtocolError(ErrorCode.INVALID_REQUEST, "the client went away before sending the whole body") from None
    return bytes(body)


def _too_large(limit: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INVALID_REQUEST, f"request body is larger than the limit of {limit} bytes", http_status=413
    )


def json_response(content: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(content), status_code=status_code, media_type=JSON_MEDIA_TYPE, headers=headers)


class CardDates:
    """When this process first served each card: its ``Last-Modified``, the same for as long as the card is.

    A card is known by its ETag (its content), so one that changes (the gateway's, as agents
    are registered) gets a new date. Few are remembered (one per spelling and address a
    server is reached at): past ``keep`` the oldest is forgotten, and dated anew if it comes back.
    """

    def __init__(self, keep: int = 16) -> None:
        self.keep = keep
        self._first_served: dict[str, int] = {}

    def of(self, etag: str) -> int:
        """The card's date, in whole seconds since the epoch (what an HTTP date holds)."""
        date = self._first_served.get(etag)
        if date is None:
            date = int(time.time())
            if len(self._first_served) >= self.keep:
                del self._first_served[next(iter(self._first_served))]
            self._first_served[etag] = date
        return date


def card_response(request: Request, card: dict[str, Any], dates: CardDates | None = None) -> Response:
    """The agent card with ``Cache-Control``, a weak ``ETag`` of its content and, with ``dates``, ``Last-Modified``.

    304 when ``If-None-Match`` names the tag, or, without ``If-None-Match`` (which takes
    precedence, RFC 9110), when ``If-Modified-Since`` is not before ``Last-Modified``. The card
    differs with the ``A2A-Version`` a client sends (``Vary``).
    """
    etag = 'W/"' + hashlib.sha256(orjson.dumps(card, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32] + '"'
    headers = {"etag": etag, "cache-control": f"public, max-age={CARD_MAX_AGE_S}", "vary": "A2A-Version"}
    modified = dates.of(etag) if dates is not None else None
    if modified is not None:
        headers["last-modified"] = format_datetime(_utc(modified), usegmt=True)
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        asked = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
        unchanged = "*" in asked or etag.removeprefix("W/") in asked
    else:
        since = _http_date(request.headers.get("if-modified-since"))
        unchanged = modified is not None and since is not None and modified <= since
    if unchanged:
        return Response(status_code=304, headers=headers)
    return json_response(card, headers=headers)


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _http_date(value: str | None) -> int | None:
    """An HTTP date as seconds since the epoch; None for none, or for one that cannot be read (then ignored)."""
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def error_response(
    error: ProtocolError, envelope: Envelope | None = None, headers: dict[str, str] | None = None
) -> Response:
    """The error body, in the caller's envelope when it sent one; the HTTP status is the same either way."""
    body = envelope.wrap_error(error) if envelope is not None else error.to_body().to_wire()
    return json_response(body, status_code=error.http_status, headers=headers)


def guarded(endpoint: Endpoint) -> Endpoint:
    """Every refusal (a ProtocolError) becomes its JSON error; anything unexpected a logged 500 that says what broke.

    A client gone before its body was complete (or cut by the server's body timeout) broke
    nothing: its answer, which no one will read, is a plain 400.
    """

    @wraps(endpoint)
    async def guarded_endpoint(request: Request) -> Response:
        try:
            return await endpoint(request)
        except EnvelopedProtocolError as exc:
            return error_response(exc, exc.envelope)
        except ProtocolError as exc:
            return error_response(exc)
        except ClientDisconnect:
            return error_response(_CLIENT_GONE)
        except HTTPException:
            raise
        except Exception as exc:
            return internal_error(request, exc, logging.getLogger(endpoint.__module__))

    return guarded_endpoint


_CLIENT_GONE = ProtocolError(ErrorCode.INVALID_REQUEST, "the connection closed before the request body was complete")


def internal_error(request: Request, exc: Exception, logger: logging.Logger | None = None) -> Response:
    """A 500 whose message names the error, logged with its traceback."""
    (logger or logging.getLogger(__name__)).error("%s %s failed", request.method, request.url.path, exc_info=exc)
    error = ProtocolError(ErrorCode.INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}", http_status=500)
    return error_response(error)


class NDJSONStreamResponse(Response):
    """Sends each line as soon as it is produced and stops reading them when the client goes away.

    Unlike Starlette's StreamingResponse, it always watches for ``http.disconnect``, so a
    dropped client is noticed while the stream is idle, not only at the next write.
    """

    media_type = NDJSON_MEDIA_TYPE

    def __init__(
        self, lines: AsyncIterator[bytes], status_code: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.lines = lines
        self.status_code = status_code
        self.background = None
        self.init_headers({"cache-control": "no-store", "x-accel-buffering": "no", **(headers or {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as task_group:

            async def stream() -> None:
                await self._stream(send)
                task_group.cancel_scope.cancel()

            task_group.start_soon(stream)
            while (await receive())["type"] != "http.disconnect":
                pass
            task_group.cancel_scope.cancel()

    async def _stream(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async for line in self.lines:
                await send({"type": "http.response.body", "body": line, "more_body": True})
        finally:
            aclose = getattr(self.lines, "aclose", None)
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class SSEStreamResponse(NDJSONStreamResponse):
    """The same, for a stream of Server-Sent Events (each item already an encoded event)."""

    media_type = SSE_MEDIA_TYPE
