"""The reference server of the benches: the least a Starlette app on uvicorn does for the same answers.

    python -m bench._reference_app PORT [asyncio|uvloop] [h11|httptools]

``POST /json`` answers a small task-shaped JSON object; ``POST /stream`` with ``{"lines": N}``
answers N NDJSON lines shaped like artifact events, written as they are produced (one
``send`` each, as an agent server's stream does); ``GET /ready`` answers 200. It runs on the loop and HTTP parser
named (default asyncio and h11), as the agent server is compared on the same.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_TASK = {
    "id": "t",
    "sessionId": "s",
    "status": {"state": "completed", "timestamp": "2024-01-01T00:00:00.000Z"},
    "artifacts": [{"parts": [{"type": "text", "text": "hi"}], "index": 0}],
    "metadata": {"cost_usd": 0.0},
}


async def _json(request: Request) -> Response:
    orjson.loads(await request.body())
    return Response(orjson.dumps(_TASK), media_type="application/json")


async def _stream(request: Request) -> Response:
    lines = int(orjson.loads(await request.body()).get("lines", 1))

    async def produce() -> AsyncIterator[bytes]:
        for seq in range(lines):
            event = {
                "seq": seq,
                "id": "t",
                "type": "artifact",
                "artifact": {"parts": [{"type": "text", "text": f"chunk-{seq} "}], "index": 0, "append": True},
                "cost_usd": 0.0,
                "final": seq == lines - 1,
            }
            yield orjson.dumps(event) + b"\n"

    return StreamingResponse(produce(), media_type="application/x-ndjson")


async def _ready(request: Request) -> Response:
    return Response(b"ok")


app = Starlette(
    routes=[
        Route("/json", _json, methods=["POST"]),
        Route("/stream", _stream, methods=["POST"]),
        Route("/ready", _ready, methods=["GET"]),
    ]
)


def main() -> None:
    port = int(sys.argv[1])
    loop, http = (sys.argv[2:] + ["asyncio", "h11"][len(sys.argv) - 2 :])[:2]
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        loop=loop,
        http=http,
        timeout_keep_alive=75,  # no idle connection closed under a client mid-bench
    )


if __name__ == "__main__":
    main()
