"""ASGI middleware: a request of a token over its rate, or a new turn or tool call over its spend cap, gets 429.

It sits behind the authentication (the caller is known) and in front of every endpoint,
so the API, the A2A faces, the proxies and MCP count alike. A request is counted when it
starts: a stream already open (a run being followed) goes on whatever the rate does after.
Public paths (the cards, ``/health``) belong to no token and are never counted.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.bindings.refusals import refusal_at
from agent_server.http.auth import UNAUTHENTICATED, principal_of
from gateway.limits.quotas import Quotas, Refusal

_STARTS_A_RUN = re.compile(r"^/(sessions/[^/]+/messages|tools/[^/]+/call)$")
"""The API's paths that start a turn or a tool call: refused with ``Retry-After`` here, before the body is read."""


class TokenLimitsMiddleware:
    def __init__(self, app: ASGIApp, quotas: Quotas) -> None:
        self.app = app
        self.quotas = quotas

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        if scope["type"] != "http" or not self.quotas:
            return self.app(scope, receive, send)
        return self._limited(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = principal_of(HTTPConnection(scope))
        refusal: Refusal | None = None
        if caller is not UNAUTHENTICATED:
            refusal = await self.quotas.take_request(caller.name)
            if refusal is None and scope["method"] == "POST" and _STARTS_A_RUN.match(scope["path"]):
                refusal = await self.quotas.spend_refusal(caller.name)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        error = refusal.error()
        await refusal_at(scope["path"], error, error.headers)(scope, receive, send)
