"""Browsers cannot drive a server unless the operator allows their origin.

A web page open in the operator's browser can send requests to a loopback server. Two
rules stop it: a request carrying an ``Origin`` that is not in ``allowed_origins`` gets
403 (default: no origin is allowed; programs other than browsers send no ``Origin``), and
every POST body must be ``application/json`` (``http.check_content_type``), which a page
cannot send to another origin without a CORS preflight. CORS headers are sent only for the
allowed origins, and only when some are configured.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from protocol import ErrorCode, ProtocolError

from .http import error_response

_ALLOWED_HEADERS = ("authorization", "content-type", "a2a-version", "traceparent", "tracestate")


class OriginGuard:
    """ASGI middleware: 403 for a request whose ``Origin`` is not allowed."""

    def __init__(self, app: ASGIApp, allowed_origins: Sequence[str] = ()) -> None:
        self.app = app
        self.allowed = frozenset(origin.rstrip("/") for origin in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = HTTPConnection(scope).headers.get("origin") if scope["type"] == "http" else None
        if origin is not None and origin.rstrip("/") not in self.allowed:
            hint = "add it to allowed_origins" if self.allowed else "no browser origin is allowed (allowed_origins)"
            error = ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"requests from the web origin {origin!r} are refused: {hint}",
                http_status=403,
            )
            await error_response(error)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def browser_middleware(allowed_origins: Sequence[str] = ()) -> list[Middleware]:
    """The origin check, then CORS for the allowed origins (none when no origin is allowed), outermost first."""
    middleware = [Middleware(OriginGuard, allowed_origins=allowed_origins)]
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
