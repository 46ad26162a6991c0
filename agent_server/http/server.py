"""The one way to run an ASGI app with uvicorn here: ``build_server``, behind ``ServerLimits``.

uvicorn alone has no header or body read timeout and no connection cap, so slow or silent
sockets are held forever and, past the open-file limit, everyone is refused. And a refusal
answered before the request body is read (413, 401, 415) is lost on clients that send the
whole body before reading (Python's urllib): the server closes with bytes unread and the
kernel resets the connection, which throws away the answer.

Two pieces keep the limits, each where it can see what it needs:

- ``LimitedH11Protocol``, a subclass of uvicorn's h11 protocol, keeps the connection-level
  limits (the header and body timeouts, the connection cap): only the protocol sees a
  connection before it carries a request, and only it can close one. The logic is in
  ``_ConnectionLimits``, which asks the parser just two things (what the request still
  lacks, whether part of the next one arrived), so an httptools protocol gets the same
  limits from the same mixin on ``HttpToolsProtocol``, answering those two from its callbacks.
- ``_DrainUnreadBody``, an ASGI wrapper the protocol puts around the app, makes refusals
  heard, the way a lingering close does: an answer given before the body was read goes out
  at once, but the response is finished only after the rest of the body was read and
  dropped. It is ASGI, not protocol code, because the end of the response is where uvicorn
  acts: its request cycle (not the protocol) closes the socket as the response completes on
  a ``Connection: close`` request (urllib's), and its ``receive()`` gives no more body after;
  the protocol could only delay that by re-implementing the cycle. As ASGI it works
  unchanged under any protocol, and since the protocol installs it, ``Config.app`` stays
  the caller's app (the gateway reads its state).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import socket
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any, Literal, cast

import h11
import orjson
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _HttpToolsProtocol
except ImportError:  # httptools is not installed: build_server refuses http='httptools'
    _HttpToolsProtocol = H11Protocol  # type: ignore[misc,assignment]

import protocol.error_body  # noqa: F401 - imported at start, not on the first answer: see _error_response
from agent_server.http.limits import ServerLimits, listen_backlog
from agent_server.http.listener import PausingListener
from agent_server.http.speedups import (
    DEFAULT_HTTP,
    DEFAULT_LOOP,
    EVENT_LOOPS,
    HTTP_PARSERS,
    EventLoop,
    HttpParser,
    not_installed,
    on_uvloop,
)
from protocol import ErrorCode, ProtocolError

try:
    import resource
except ImportError:  # Windows: no open-file limit to raise
    resource = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

# Open files a server needs besides its connections (listeners, logs, stores, outgoing calls), and
# the refused connections read from at once, part of them: more are closed right after their 503,
# so however fast refused clients come the server stays within max_connections + _OWN_FILES.
_OWN_FILES = 128
_LINGERING_REFUSALS = 64

_Awaiting = Literal["headers", "body"]


def build_server(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    limits: ServerLimits | None = None,
    server_class: type[uvicorn.Server] = uvicorn.Server,
    loop: EventLoop = DEFAULT_LOOP,
    http: HttpParser = DEFAULT_HTTP,
    **config: Any,
) -> uvicorn.Server:
    """A ``server_class`` serving ``app`` on ``host:port`` behind ``limits`` (default ``ServerLimits()``).

    ``config`` goes to ``uvicorn.Config`` (log_level, lifespan, timeout_graceful_shutdown, ...);
    the protocol, the keep-alive timeout and the listen backlog come from ``limits``. ``loop`` and ``http``: see
    agent_server/http/speedups.py; asking for uvloop or httptools where it is not installed is a RuntimeError that
    says how to install it. Building it raises this process's open-file limit as far as allowed.
    """
    if loop not in EVENT_LOOPS:
        raise ValueError(f"loop must be one of {', '.join(EVENT_LOOPS)}, not {loop!r}")
    if http not in HTTP_PARSERS:
        raise ValueError(f"http must be one of {', '.join(HTTP_PARSERS)}, not {http!r}")
    problem = not_installed(loop, http)
    if problem is not None:
        raise RuntimeError(problem)
    limits = limits or ServerLimits()
    _raise_open_file_limit(limits.max_connections)
    protocol = LimitedHttpToolsProtocol if http == "httptools" else LimitedH11Protocol
    uvicorn_config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=functools.partial(protocol, limits=limits),  # type: ignore[arg-type]
        loop="uvloop" if on_uvloop(loop) else "asyncio",
        timeout_keep_alive=limits.keep_alive_timeout_s,  # type: ignore[arg-type]
        backlog=listen_backlog(limits),
        **config,
    )
    return server_class(uvicorn_config)


GC_YOUNG_THRESHOLD = 50_000
"""Tracked objects allocated (net of those freed) between two young collections of a server process
(Python's default: 700). A server with many requests open allocates thousands of objects per
request that live across its awaits (coroutines, futures, cancel scopes, buffers' dicts): at 700,
each was examined again by young and middle collections, and every tenth middle one could start a
full collection of everything open, so with many concurrent streams the collector took a large
share of the process's CPU and delayed first progress. Cycles are still collected; at most this
many young objects wait for it."""


def run_server(server: uvicorn.Server, sockets: list[socket.socket] | None = None) -> None:
    """Run ``server`` as the job of this process (a command's): until it stops, on ``sockets`` or on the one
    its configuration names (bound here).

    It accepts on ``PausingListener``s (agent_server/http/listener.py) taking over those sockets (each
    is detached; the server closes its listener when it stops), so that running out of descriptors
    pauses accepting instead of filling the log.

    What start-up made (modules, models, the app) lives as long as the process, so it is
    frozen out of the cyclic garbage collector first: every full collection would walk it
    again, and a server makes many (a streamed answer's events are tracked objects). Young
    collections then run every ``GC_YOUNG_THRESHOLD`` allocations, not every 700.
    """
    server.config.load()
    listeners: list[socket.socket] = [
        PausingListener.taking_over(sock) for sock in sockets or [server.config.bind_socket()]
    ]
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    server.run(sockets=listeners)


class _ConnectionLimits:
    """The limits on one connection, mixed in before a uvicorn HTTP protocol.

    It times the request's headers and body (one timer, re-armed whenever what the request
    still lacks changes), refuses connections past the cap, and answers refusals and
    timeouts so they are heard: the answer, then a half-close, then reading and dropping
    until the client closes or ``linger_s`` passes.
    """

    # Set by uvicorn's protocols.
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop
    connections: set[Any]
    flow: Any
    cycle: Any
    app: ASGIApp

    def __init__(self, *args: Any, limits: ServerLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.app = _DrainUnreadBody(self.app, limits.max_drain_bytes)
        self._timer: asyncio.TimerHandle | None = None
        self._timing: _Awaiting | None = None
        self._lingering = False

    def _awaiting(self) -> _Awaiting | None:
        """What the current request still lacks: its headers, its body, or nothing."""
        raise NotImplementedError

    def _request_begun(self) -> bool:
        """Whether some bytes of a request whose headers are not complete have arrived."""
        raise NotImplementedError

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # a TCP stream's (uvloop's is one by duck typing only)
        super().connection_made(_LingeringClose(transport, self))  # type: ignore[misc]
        if len(self.connections) > self.limits.max_connections:
            if len(self.connections) == self.limits.max_connections + 1:  # as the limit is reached, not per refusal
                logger.warning("at the limit of %d connections: new ones get 503", self.limits.max_connections)
            error = ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                f"the server is at its limit of {self.limits.max_connections} connections; retry in a second",
                http_status=503,
            )
            linger = len(self.connections) <= self.limits.max_connections + _LINGERING_REFUSALS
            self._answer_and_linger(error, {"retry-after": "1"}, linger=linger)
            return
        self._follow_request()

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        super().data_received(data)  # type: ignore[misc]
        self._follow_request()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        # Asked before uvicorn moves on: once this request is done, it starts the next one already received.
        owed = not self.transport.is_closing() and self._awaiting() == "body"
        super().on_response_complete()  # type: ignore[misc]
        if owed:
            # The answer is out, the body still owed: the drain gave up on it, or the client was never asked
            # for it. Close, but read and drop what still comes first, so the answer is not reset away.
            self._linger()
            return
        self._follow_request()

    def shutdown(self) -> None:
        if self._lingering:
            self.transport.close()
        else:
            super().shutdown()  # type: ignore[misc]

    def _follow_request(self) -> None:
        """Arm the timer for what the request lacks now, if that changed."""
        if self._lingering:
            return
        awaiting = None if self.transport.is_closing() else self._awaiting()
        if awaiting == self._timing:
            return
        self._cancel_timer()
        self._timing = awaiting
        if awaiting == "headers":
            seconds = self.limits.header_timeout_s
            if self.cycle is not None:  # keep-alive: an idle connection is the keep-alive timeout's to close
                seconds = max(seconds, self.limits.keep_alive_timeout_s)
            self._timer = self.loop.call_later(seconds, self._headers_too_slow)
        elif awaiting == "body":
            self._timer = self.loop.call_later(self.limits.body_timeout_s, self._body_too_slow)

    def send_400_response(self, msg: str) -> None:
        """A request the parser refused: the project's JSON error, then a close that lets the client read it."""
        error = ProtocolError(
            ErrorCode.INVALID_REQUEST,
            "the request is not valid HTTP/1.1 (request line, method or headers); send a well-formed request",
            http_status=400,
        )
        self._answer_and_linger(error)

    def _headers_too_slow(self) -> None:
        if not self._request_begun():
            self.transport.close()  # nothing was asked, so there is nothing to answer
            return
        seconds = self.limits.header_timeout_s
        logger.debug("closed a connection: request headers incomplete after %g s", seconds)
        error = ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"the request headers were not complete within {seconds:g} s; send the request line and headers at once",
            http_status=408,
        )
        self._answer_and_linger(error)

    def _body_too_slow(self) -> None:
        seconds = self.limits.body_timeout_s
        logger.debug("closed a connection: request body incomplete after %g s", seconds)
        if self.cycle.response_started:
            self.transport.close()
            return
        error = ProtocolError(
            ErrorCode.INVALID_REQUEST,
            f"the request body was not complete within {seconds:g} s of its headers; "
            "send the whole body without pauses, or a smaller one",
            http_status=408,
        )
        self._answer_and_linger(error)

    def _answer_and_linger(
        self, error: ProtocolError, headers: dict[str, str] | None = None, *, linger: bool = True
    ) -> None:
        """Answer ``error``, then close without resetting the client (unless not ``linger``).

        An app still running for the request sees a disconnect; what it sends is dropped.
        """
        self._cancel_timer()
        self._lingering = True
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        self.transport.write(_error_response(error, headers or {}))
        if linger:
            self._linger()
        else:
            self.transport.close()

    def _linger(self) -> None:
        """Half-close, read and drop until the client closes or ``linger_s`` passes, then close.

        A close while the client may still be sending (RFC 9112, 9.6): closing at once with its
        bytes unread would reset the connection and throw away the answer it has not read yet.
        """
        self._cancel_timer()
        self._lingering = True
        try:
            self._socket.write_eof()
        except (NotImplementedError, OSError):  # TLS cannot half-close; a client already gone cannot be
            self._socket.close()
            return
        self.flow.resume_reading()
        self._timer = self.loop.call_later(self.limits.linger_s, self._socket.close)

    @property
    def _socket(self) -> asyncio.Transport:
        """The connection's own transport, under uvicorn's ``_LingeringClose``.

        A property, not an attribute: uvicorn's protocol already sets 25 attributes, this class 4,
        and at 30 an instance's attributes no longer share their keys with the other instances'
        (a dict of its own per connection).
        """
        return cast(_LingeringClose, self.transport)._transport

    def _body_owed(self) -> bool:
        return not self._lingering and self._awaiting() == "body"

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _LingeringClose:
    """The connection's transport as uvicorn sees it: a close while the request body is still owed lingers.

    What uvicorn calls on every request is bound here once (``write``, ``is_closing``): reached
    through ``__getattr__`` each call paid for the lookup, a few times per request.
    """

    __slots__ = ("_limits", "_transport", "is_closing", "write")

    def __init__(self, transport: asyncio.Transport, limits: _ConnectionLimits) -> None:
        self._transport = transport
        self._limits = limits
        self.write = transport.write
        self.is_closing = transport.is_closing

    def close(self) -> None:
        if self._limits._body_owed():
            self._limits._linger()
        else:
            self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class LimitedH11Protocol(_ConnectionLimits, H11Protocol):
    """uvicorn's h11 protocol behind ``ServerLimits`` (give it with ``functools.partial(..., limits=...)``)."""

    def _awaiting(self) -> _Awaiting | None:
        state = self.conn.their_state
        if state is h11.IDLE:
            return "headers"
        if state is h11.SEND_BODY:
            return "body"
        return None

    def _request_begun(self) -> bool:
        return bool(self.conn.trailing_data[0])


class LimitedHttpToolsProtocol(_ConnectionLimits, _HttpToolsProtocol):
    """uvicorn's httptools protocol behind ``ServerLimits``: the parser's callbacks say what the request lacks.

    httptools parses a request that arrives behind the one being answered at once (h11 only
    once the answer is out), so ``_phase`` is that of the last request parsed, which may not be
    the current one: a request queued behind a running one (uvicorn's ``pipeline``), or one
    whose headers are still coming while an answer goes out, lacks nothing yet. It is timed from
    the end of the answer before it, as under h11; until then the connection is busy, not slow.
    """

    _phase: _Awaiting | Literal["begun", "complete"] = "headers"
    pipeline: Any  # set by uvicorn's protocol: the requests parsed while another was answered

    def _awaiting(self) -> _Awaiting | None:
        answered = self.cycle is None or self.cycle.response_complete
        if self.pipeline or (not answered and self._phase != "body"):
            return None  # the current request has its body; the next one waits for the answer to end
        return "body" if self._phase == "body" else "headers"

    def _request_begun(self) -> bool:
        return self._phase == "begun"

    def on_message_begin(self) -> None:
        self._phase = "begun"
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._phase = "body"
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._phase = "complete"
        super().on_message_complete()


class _DrainUnreadBody:
    """Finishes a response only after the request body is read, so a client that reads late hears it.

    An answer sent before the body was read (a 413 on Content-Length, a 401) goes out at once,
    all but the end of the response; the rest of the body is then read and dropped, up to
    ``max_drain_bytes`` (the protocol's body timeout bounds the time), and the response
    finished. A client that waits for ``100 Continue`` and was never asked for its body will
    not send it, so nothing is drained for it, and the answer says ``Connection: close``: a
    client that sent the body anyway must not send its next request on this connection.
    """

    def __init__(self, app: ASGIApp, max_drain_bytes: int) -> None:
        self.app = app
        self.max_drain_bytes = max_drain_bytes

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The app's own awaitable, not a coroutine of this one: a stream's request holds no frame of it."""
        if scope["type"] != "http" or not _has_body(scope):
            return self.app(scope, receive, send)
        request = _BodyTracked(scope, receive, send, self.max_drain_bytes)
        return self.app(scope, request.receive, request.send)


class _BodyTracked:
    """One request's ``receive`` and ``send`` for ``_DrainUnreadBody``.

    An object with slots, not two closures and their cells, as every open stream holds one
    (as ``_LingeringClose`` has slots: less memory per open stream).
    """

    __slots__ = ("_asked", "_body_done", "_limit", "_receive", "_scope", "_send")

    def __init__(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        self._scope = scope
        self._receive = receive
        self._send = send
        self._limit = limit
        self._asked = False
        self._body_done = False

    async def receive(self) -> Message:
        self._asked = True
        message = await self._receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            self._body_done = True
        return message

    async def send(self, message: Message) -> None:
        unasked = not self._asked and _expects_continue(self._scope)
        if message["type"] == "http.response.start" and unasked:
            # The body was never asked for, so the connection cannot carry another request: say so.
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        final = message["type"] == "http.response.body" and not message.get("more_body", False)
        if not final or self._body_done or unasked:
            await self._send(message)
            return
        await self._send({**message, "more_body": True})
        await _drain(self.receive, self._limit)
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop the rest of a request body, until its end, a disconnect, or past ``limit`` bytes."""
    dropped = 0
    while dropped < limit:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            return
        dropped += len(message.get("body", b""))


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


def _expects_continue(scope: Scope) -> bool:
    return any(name == b"expect" and value.lower() == b"100-continue" for name, value in scope["headers"])


def _error_response(error: ProtocolError, headers: dict[str, str]) -> bytes:
    """A whole HTTP/1.1 response carrying ``error`` in the project's JSON shape, closing the connection.

    Its body's model (protocol/error_body.py) is imported with this module, not on the first
    answer: the answers written here are the ones a server gives when it is out of descriptors,
    and importing a module then fails for want of one to open its file.
    """
    body = orjson.dumps(error.to_body().to_wire())
    status = HTTPStatus(error.http_status)
    lines = [
        f"HTTP/1.1 {status.value} {status.phrase}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _raise_open_file_limit(max_connections: int) -> None:
    """Raise the soft open-file limit to the hard one; warn when it still cannot hold ``max_connections``."""
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max_connections + _OWN_FILES
    target = hard if hard != resource.RLIM_INFINITY else max(soft, needed)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            logger.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    logger.info("open-file limit: %s (hard limit %s)", _limit_text(soft), _limit_text(hard))
    if soft != resource.RLIM_INFINITY and soft < needed:
        logger.warning(
            "the open-file limit is %d, below the %d that max_connections=%d needs (%d more for the server's own "
            "files); past it new connections fail with 'Too many open files': raise the hard limit "
            "(ulimit -Hn, LimitNOFILE= in systemd) or lower max_connections",
            soft,
            needed,
            max_connections,
            _OWN_FILES,
        )


def _limit_text(value: int) -> str:
    return "unlimited" if value == resource.RLIM_INFINITY else str(value)
