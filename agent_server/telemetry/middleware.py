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
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(_SEEN):
            await self.app(scope, receive, send)
            return
        scope[_SEEN] = True
        method: str = scope["method"]
        status = 500
        streaming = False
        started = time.perf_counter()

        async def sending(message: Message) -> None:
            nonlocal status, streaming
            if message["type"] == "http.response.start":
                status = message["status"]
                streaming = any(k == b"content-type" and v.startswith(_NDJSON) for k, v in message.get("headers", ()))
                if streaming:
                    metrics.stream_opened("server")
            await send(message)

        name = f"{method} {scope['path']}"
        traced = tracing.enabled()
        context = tracing.extract(_headers(scope)) if traced else None
        attributes = _request_attributes(scope) if traced else None
        try:
            with tracing.span(name, attributes, kind="server", context=context) as span:
                try:
                    await self.app(scope, receive, sending)
                finally:
                    route = _route(scope)
                    if span is not None:
                        span.update_name(f"{method} {route}")
                        tracing.set_attributes(span, {"http.route": route, "http.response.status_code": status})
        finally:
            if streaming:
                metrics.stream_closed("server")
            metrics.record_request(_route(scope), method, status, time.perf_counter() - started)


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
