"""One ASGI wrapper per service for what every request gets: a server span and the request metrics.

The server span continues the caller's trace (W3C ``traceparent``) and lasts until the
response's last byte, so a stream's span covers the stream. Requests are counted by route
template (``/tasks/{task_id}``, never the path itself: the label set stays bounded). An
app mounted inside another (the gateway's own agent binding) is not observed twice.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_server.telemetry import metrics, tracing
from protocol.ndjson import MEDIA_TYPE as NDJSON_MEDIA_TYPE

_SEEN = "switchboard.observed"
_NDJSON = NDJSON_MEDIA_TYPE.encode()


class ObservedRequests:
    """The span and the counts of each request; a process that records no spans makes none of their parts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(_SEEN):
            await self.app(scope, receive, send)
            return
        scope[_SEEN] = True
        answer = _Answer(send)
        started = time.perf_counter()
        try:
            if tracing.enabled():
                await self._traced(scope, receive, answer)
            else:
                await self.app(scope, receive, answer)
        finally:
            if answer.streaming:
                metrics.stream_closed("server")
            metrics.record_request(_route(scope), scope["method"], answer.status, time.perf_counter() - started)

    async def _traced(self, scope: Scope, receive: Receive, answer: _Answer) -> None:
        method: str = scope["method"]
        context = tracing.extract(_headers(scope))
        attributes = _request_attributes(scope)
        with tracing.span(f"{method} {scope['path']}", attributes, kind="server", context=context) as span:
            try:
                await self.app(scope, receive, answer)
            finally:
                if span is not None:
                    route = _route(scope)
                    span.update_name(f"{method} {route}")
                    tracing.set_attributes(span, {"http.route": route, "http.response.status_code": answer.status})


class _Answer:
    """The ``send`` the app is handed: it notes the response's status and whether it is a stream (counted open)."""

    __slots__ = ("send", "status", "streaming")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status = 500
        self.streaming = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            for name, value in message.get("headers", ()):
                if name == b"content-type":
                    self.streaming = value.startswith(_NDJSON)
                    break
            if self.streaming:
                metrics.stream_opened("server")
        await self.send(message)


def _route(scope: Scope) -> str:
    """The matched route's template; unmatched paths share one label."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "(unmatched)"


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}


def _request_attributes(scope: Scope) -> dict[str, str | int]:
    return {
        "http.request.method": scope["method"],
        "url.path": scope["path"],
        "url.scheme": scope.get("scheme", "http"),
    }
