"""The gateway's one HTTP client for calls to agents: aiohttp behind ``PeerLimits``, shared by every HTTP peer.

aiohttp because it serves many concurrent calls on one pool better than httpx, whose pool
bookkeeping collapses under concurrency (docs/speed.md, "The gateway's HTTP pool").

Every request goes through ``open``, which keeps the limits and reports each failure as the
gateway's error with its reason:

- the pool: at most ``max_connections`` requests hold a connection at once; waiting for one is
  bounded by ``pool_timeout_s`` and reported as ``pool_exhausted`` (never blamed on the agent);
- connecting: ``connect_timeout_s`` (``connect_timeout``);
- writing: once the request starts being written (the connection is held), its body must be
  written within ``headers_timeout_s`` (``headers_timeout``); ``on_sent`` is called as writing
  starts, so a reply deadline counts only the agent's time;
- ``wait_headers``: the response headers must also arrive within ``headers_timeout_s`` of that
  moment (``headers_timeout``): for streams, whose lines then have no read timeout here (the
  caller's idle timeout takes its place);
- ``read_timeout_s``: no silence longer than that while waiting for the answer (``timeout``);
- redirects are never followed: a 3xx answer is a ``PeerRedirect`` naming where it pointed;
- a refused, reset or broken connection is a ``PeerConnectionError``; but a request written on
  a pooled connection the agent had closed meanwhile (its keep-alive ran out as the request
  went out: it never read it) is sent again, once, on a new connection. Pooled connections
  are kept idle ``keepalive_s``, below the keep-alive of common servers, so that is rare.

No cookies are kept (nothing one agent sets reaches another); the caller gives each request
its headers (the peer's token goes only to its own peer). With tracing on, each request is a
client span and carries its W3C ``traceparent`` (gateway/telemetry/spans.py).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import aiohttp.payload
import anyio

from gateway.errors import AgentToolError, AgentToolTimeout, PeerConnectionError, PeerRedirect, PoolExhausted
from gateway.peers.base import OnSent
from gateway.peers.limits import PeerLimits
from gateway.telemetry import spans

logger = logging.getLogger("gateway.peers")


class PeerResponse:
    """An answer whose headers have arrived; its body is read through ``read`` or ``chunks``, once."""

    def __init__(self, response: aiohttp.ClientResponse, uri: str) -> None:
        self._response = response
        self.uri = uri
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers

    async def read(self, limit: int) -> bytearray:
        """At most ``limit`` bytes of the body (decoded); the rest is never read."""
        body = bytearray()
        try:
            async for chunk in self._response.content.iter_any():
                body += chunk[: limit - len(body)]
                if len(body) >= limit:
                    break
        except aiohttp.SocketTimeoutError:
            raise  # a read timeout, named by ``open`` which knows the deadline
        except (aiohttp.ClientError, OSError) as exc:
            raise self._broken("the answer from", exc) from exc
        return body

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body as it arrives; a connection that breaks mid-body is a PeerConnectionError."""
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
                del chunk  # not held while the next is awaited
        except aiohttp.SocketTimeoutError:
            raise
        except (aiohttp.ClientError, OSError) as exc:
            raise self._broken("the stream from", exc) from exc

    def _broken(self, what: str, exc: BaseException) -> PeerConnectionError:
        return PeerConnectionError(f"{what} {self.uri} broke: {_describe(exc)}")


class PeerHttpClient:
    """One connection pool for every HTTP peer of a gateway; ``aclose`` when done (the Gateway does)."""

    def __init__(self, limits: PeerLimits | None = None) -> None:
        self.limits = limits or PeerLimits()
        self._slots = anyio.Semaphore(self.limits.max_connections)
        self._session: aiohttp.ClientSession | None = None
        self._fresh_session: aiohttp.ClientSession | None = None

    async def aclose(self) -> None:
        sessions = (self._session, self._fresh_session)
        self._session = self._fresh_session = None
        for session in sessions:
            if session is not None:
                await session.close()

    @asynccontextmanager
    async def open(
        self,
        method: str,
        url: str,
        *,
        uri: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        on_sent: OnSent | None = None,
        wait_headers: bool = False,
        read_timeout_s: float | None = None,
    ) -> AsyncIterator[PeerResponse]:
        """Send one request (``uri`` names the peer in errors); the block reads the answer, which closes after."""
        await self._slot(uri)
        try:
            with spans.request(method, url) as span:
                sent = spans.propagated(headers)
                response = await self._send(method, url, uri, sent, body, on_sent, wait_headers, read_timeout_s)
                spans.response(span, response.status)
                try:
                    if 300 <= response.status < 400:
                        location = response.headers.get("location", "(no Location header)")
                        raise PeerRedirect(response.status, location, uri)
                    try:
                        yield PeerResponse(response, uri)
                    except aiohttp.SocketTimeoutError as exc:
                        raise _read_timeout(uri, read_timeout_s) from exc
                finally:
                    response.close()
        finally:
            self._slots.release()

    async def _slot(self, uri: str) -> None:
        """A place in the pool: at once when one is free (no cancel scope to set up), else within ``pool_timeout_s``."""
        try:
            self._slots.acquire_nowait()
            return
        except anyio.WouldBlock:
            pass
        limits = self.limits
        with anyio.move_on_after(limits.pool_timeout_s):
            await self._slots.acquire()
            return
        raise PoolExhausted(limits.max_connections, limits.pool_timeout_s, uri)

    async def _send(
        self,
        method: str,
        url: str,
        uri: str,
        headers: Mapping[str, str],
        body: bytes | None,
        on_sent: OnSent | None,
        wait_headers: bool,
        read_timeout_s: float | None,
    ) -> aiohttp.ClientResponse:
        headers_timeout_s = self.limits.headers_timeout_s
        phase = _Phase()
        response: aiohttp.ClientResponse | None = None
        with anyio.CancelScope() as waiting:

            def started() -> None:
                waiting.deadline = anyio.current_time() + headers_timeout_s
                if on_sent is not None:
                    on_sent()

            def written() -> None:
                phase.written = True
                if not wait_headers:
                    waiting.deadline = math.inf

            timeout = aiohttp.ClientTimeout(
                total=None, connect=None, sock_connect=self.limits.connect_timeout_s, sock_read=read_timeout_s
            )

            async def request(session: aiohttp.ClientSession) -> aiohttp.ClientResponse:
                payload = _TimedBody(body, started, written) if body is not None else None
                return await session.request(
                    method,
                    url,
                    data=payload,
                    headers=headers,
                    allow_redirects=False,
                    timeout=timeout,
                    trace_request_ctx=phase,
                )

            try:
                try:
                    response = await request(self._client())
                except _CLOSED_UNDER_US as exc:
                    if not phase.reused:
                        raise
                    # The agent closed the pooled connection as the request went out (its keep-alive ran
                    # out): it never read the request, so it is sent again, once, on a new connection.
                    logger.info("%s closed a pooled connection under a request (%s); sending it again", uri, exc)
                    phase.written = phase.reused = False
                    response = await request(self._fresh_client())
            except aiohttp.ConnectionTimeoutError as exc:
                seconds = self.limits.connect_timeout_s
                raise AgentToolTimeout(
                    f"could not connect to {uri} within {seconds:g} s", reason="connect_timeout", seconds=seconds
                ) from exc
            except aiohttp.SocketTimeoutError as exc:
                raise _read_timeout(uri, read_timeout_s) from exc
            except (aiohttp.ClientError, OSError) as exc:
                raise PeerConnectionError(f"cannot reach {uri}: {_describe(exc)}") from exc
        if response is not None:
            return response
        if not phase.written:
            raise AgentToolTimeout(
                f"could not send the request to {uri} within {headers_timeout_s:g} s",
                reason="headers_timeout",
                seconds=headers_timeout_s,
            )
        raise AgentToolTimeout(
            f"{uri} sent no response headers within {headers_timeout_s:g} s",
            reason="headers_timeout",
            seconds=headers_timeout_s,
        )

    def _client(self) -> aiohttp.ClientSession:
        """The session, made in the event loop on first use (a Gateway may be built outside one)."""
        if self._session is None:
            tracing = aiohttp.TraceConfig()
            tracing.on_connection_reuseconn.append(_reused)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=self.limits.keepalive_s),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=None),
                trace_configs=[tracing],
            )
        return self._session

    def _fresh_client(self) -> aiohttp.ClientSession:
        """A session whose every request has a connection of its own, closed after: for a request sent again."""
        if self._fresh_session is None:
            self._fresh_session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=True),
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=None),
            )
        return self._fresh_session


_CLOSED_UNDER_US = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)
"""How a request written on a connection the agent had closed fails (disconnected, reset, broken pipe)."""


async def _reused(session: aiohttp.ClientSession, context: Any, params: Any) -> None:
    """A request got a pooled connection (aiohttp's trace hook): only such a request is sent again."""
    phase = context.trace_request_ctx
    if isinstance(phase, _Phase):
        phase.reused = True


class _Phase:
    """Where one request got to: whether its connection came from the pool, whether its body was written."""

    reused = False
    written = False


class _TimedBody(aiohttp.payload.BytesPayload):
    """A request body that says when it starts being written and when it has been written (drained)."""

    def __init__(self, body: bytes, started: Callable[[], None], written: Callable[[], None]) -> None:
        super().__init__(body)
        self._started = started
        self._written = written

    async def write_with_length(self, writer: Any, content_length: int | None) -> None:
        self._started()
        await super().write_with_length(writer, content_length)
        await writer.drain()
        self._written()


def _read_timeout(uri: str, seconds: float | None) -> AgentToolError:
    return AgentToolTimeout(f"{uri} did not answer within {seconds or 0:g} s", reason="timeout", seconds=seconds or 0)


def _describe(exc: BaseException) -> str:
    """What went wrong, in a person's words: not aiohttp's (``ssl:default``, ``TransferEncodingError``)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        error = exc.os_error
        reason = os.strerror(error.errno) if error.errno else str(error)
        return f"{reason.lower()} (connecting to {exc.host}:{exc.port})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the connection was closed before an answer came"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the answer was cut off before its end"
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno).lower()
    return str(exc) or type(exc).__name__
