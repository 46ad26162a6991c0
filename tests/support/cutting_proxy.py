"""A proxy that cuts streams: the first streaming send of each body ends after a few events, as a flaky network would.

It forwards every request (any method, any path) to its target; the response to the first
JSON-RPC ``message/stream`` / ``SendStreamingMessage`` or HTTP+JSON ``POST .../message:stream``
of each body is ended after ``CUT_AFTER_EVENTS`` Server-Sent Events, so a client has to
resubscribe to see the rest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

CUT_AFTER_EVENTS = 3
_METHODS = ["GET", "POST", "DELETE"]


def streaming_send(path: str, body: bytes) -> bool:
    return path.endswith("/message:stream") or b'"message/stream"' in body or b'"SendStreamingMessage"' in body


def cutting_proxy(target: str) -> Starlette:
    """Forwards every request to ``target``; the first stream of each task is ended after a few events."""
    cut: set[bytes] = set()

    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        client = httpx.AsyncClient(timeout=30)
        upstream = await client.send(
            client.build_request(request.method, target + request.url.path, content=body, headers=headers),
            stream=True,
        )
        cutting = streaming_send(request.url.path, body)
        first = body not in cut
        cut.add(body)

        async def relay() -> AsyncIterator[bytes]:
            events = 0
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
                    events += chunk.count(b"\n\n")
                    if cutting and first and events >= CUT_AFTER_EVENTS:
                        return
            finally:
                await upstream.aclose()
                await client.aclose()

        media_type = upstream.headers.get("content-type")
        return StreamingResponse(relay(), status_code=upstream.status_code, media_type=media_type)

    return Starlette(routes=[Route("/{path:path}", forward, methods=_METHODS)])
