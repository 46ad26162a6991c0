"""Browsers cannot drive a server unless the operator allows their origin.

A web page open in the operator's browser can send requests to a loopback server. Two
rules stop it: a request carrying an ``Origin`` that is not in ``allowed_origins`` gets
403 (default: no origin is allowed; programs other than browsers send no ``Origin``), and
every POST body must be ``application/json`` (``http.check_content_type``), which a page
cannot send to another origin without a CORS preflight. CORS headers are sent only for the
allowed origins, and only when some are configured.

A server that serves its own page (the gateway's console) may also accept requests from
that page: ``own_origin`` allows an ``Origin`` equal to the request's own scheme and
``Host`` when that host is a loopback address or ``localhost``. A page of another site
cannot claim that origin (the browser sets it), and DNS rebinding cannot either: a
rebound name arrives as its own ``Host``, which is not loopback. Off loopback, the page's
origin is allowed by listing it (the gateway adds its ``public_url``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Sequence

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.http.auth import Refusal, shared_refusal
from protocol import ErrorCode, ProtocolError

_ALLOWED_HEADERS = ("authorization", "content-type", "a2a-version", "traceparent", "tracestate")


class OriginGuard:
    """ASGI middleware: 403 for a request whose ``Origin`` is not allowed."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_origins: Sequence[str] = (),
        own_origin: bool = False,
        refusal: Refusal = shared_refusal,
    ) -> None:
        self.app = app
        self.refusal = refusal
        self.allowed = frozenset(origin.rstrip("/") for origin in allowed_origins)
        self.own_origin = own_origin

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        """The inner app's awaitable (or the refusal's), not a coroutine: an open stream holds no frame here."""
        origin = _origin(scope) if scope["type"] == "http" else None
        if origin is not None and origin.rstrip("/") not in self.allowed and not self._is_own(origin, scope):
            hint = "add it to allowed_origins" if self.allowed else "no browser origin is allowed (allowed_origins)"
            error = ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"requests from the web origin {origin!r} are refused: {hint}",
                http_status=403,
            )
            return self.refusal(scope["path"], error, None)(scope, receive, send)
        return self.app(scope, receive, send)

    def _is_own(self, origin: str, scope: Scope) -> bool:
        """The server's own page on loopback: ``Origin`` is this request's scheme and ``Host``, a loopback host."""
        if not self.own_origin:
            return False
        connection = HTTPConnection(scope)
        host = connection.headers.get("host", "")
        return origin == f"{connection.url.scheme}://{host}" and _is_loopback_host(host)


def _origin(scope: Scope) -> str | None:
    """The request's ``Origin`` header, read from the raw headers (a ``Headers`` object per request cost more)."""
    for name, value in scope["headers"]:
        if name == b"origin":
            return str(value.decode("latin-1"))
    return None


def _is_loopback_host(host: str) -> bool:
    """``127.0.0.1:8080``, ``[::1]:8080``, ``localhost:8080``, with or without the port."""
    name = host[1:].partition("]")[0] if host.startswith("[") else host.partition(":")[0]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def browser_middleware(
    allowed_origins: Sequence[str] = (), own_origin: bool = False, refusal: Refusal = shared_refusal
) -> list[Middleware]:
    """The origin check, then CORS for the allowed origins (none when no origin is allowed), outermost first.

    ``own_origin``: also accept the server's own page on loopback (see the module docstring).
    ``refusal``: how a refused origin is answered at a path (auth.py's ``Refusal``).
    """
    middleware = [Middleware(OriginGuard, allowed_origins=allowed_origins, own_origin=own_origin, refusal=refusal)]
    if allowed_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(allowed_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=list(_ALLOWED_HEADERS),
                expose_headers=["x-run-id", "x-session-id", "location"],
            )
        )
    return middleware
