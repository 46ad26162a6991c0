"""An OpenAI-compatible endpoint on loopback for end-to-end tests: chat completions from a script,
embeddings from a function, every request recorded. Payloads have the shape OpenAI's API answers
with (ids, usage, finish reasons), as in tests/support/openai_payloads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.servers import serve_app

Embed = Callable[[str], list[float]]


@dataclass
class Endpoint:
    """What the endpoint answers and what it was asked; ``url`` ends in ``/v1`` (an ``OPENAI_BASE_URL``)."""

    url: str = ""
    replies: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def bodies(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [body for seen, _, body in self.requests if seen == path]

    def headers(self, path: str) -> list[dict[str, str]]:
        with self.lock:
            return [headers for seen, headers, _ in self.requests if seen == path]


def completion(content: str | None = None, tool_calls: Sequence[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """A ``chat.completion`` as OpenAI sends it; ``tool_calls`` as (id, name, JSON arguments)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in tool_calls
        ]
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if tool_calls else "stop"}
        ],
        "usage": {"prompt_tokens": 80, "completion_tokens": 12, "total_tokens": 92},
        "system_fingerprint": "fp_loopback",
    }


@contextmanager
def openai_endpoint(embed: Embed | None = None) -> Iterator[Endpoint]:
    """Serve ``/v1/chat/completions`` (the next of ``replies``) and ``/v1/embeddings`` (``embed`` of each input)."""
    endpoint = Endpoint()

    async def record(request: Request) -> dict[str, Any]:
        body = orjson.loads(await request.body())
        with endpoint.lock:
            endpoint.requests.append((request.url.path, dict(request.headers), body))
        return body

    async def chat(request: Request) -> Response:
        await record(request)
        with endpoint.lock:
            if not endpoint.replies:
                error = {"error": {"message": "no reply scripted", "type": "invalid_request_error"}}
                return Response(orjson.dumps(error), status_code=400, media_type="application/json")
            reply = endpoint.replies.pop(0)
        return Response(orjson.dumps(reply), media_type="application/json")

    async def embeddings(request: Request) -> Response:
        body = await record(request)
        assert embed is not None, "this endpoint serves no embeddings"
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": embed(text)} for i, text in enumerate(texts)]
        usage = {"prompt_tokens": 4 * len(texts), "total_tokens": 4 * len(texts)}
        return Response(
            orjson.dumps({"object": "list", "data": data, "model": body["model"], "usage": usage}),
            media_type="application/json",
        )

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
        ]
    )
    with serve_app(app) as base_url:
        endpoint.url = f"{base_url}/v1"
        yield endpoint
