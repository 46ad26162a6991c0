"""A webhook receiver for the push-notification tests: a small Starlette app that records what it is sent.

``POST /hooks/{name}`` records the request's headers and JSON body and answers 200, except
that the names in ``failing_first`` answer 500 to their first request (recorded apart, in
``refused``), as a receiver that was briefly down. The server runs in another thread
(``serve_app``), so the records are guarded by a lock and read as copies.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.support.servers import serve_app


@dataclass(frozen=True)
class Delivery:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Webhooks:
    """What each hook received (answered 200) and refused (answered 500), in arrival order."""

    failing_first: frozenset[str] = frozenset()
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _received: dict[str, list[Delivery]] = field(default_factory=dict)
    _refused: dict[str, int] = field(default_factory=dict)

    def hook(self, name: str) -> str:
        return f"{self.url}/hooks/{name}"

    def received(self, name: str) -> list[Delivery]:
        with self._lock:
            return list(self._received.get(name, []))

    def refused(self, name: str) -> int:
        with self._lock:
            return self._refused.get(name, 0)

    async def endpoint(self, request: Request) -> Response:
        name = request.path_params["name"]
        body = await request.json()
        with self._lock:
            if name in self.failing_first and name not in self._refused:
                self._refused[name] = 1
                return Response("briefly down", status_code=500)
            self._received.setdefault(name, []).append(Delivery(dict(request.headers), body))
        return Response(status_code=200)


@contextmanager
def serve_webhooks(failing_first: frozenset[str] = frozenset()) -> Iterator[Webhooks]:
    hooks = Webhooks(failing_first=failing_first)
    app = Starlette(routes=[Route("/hooks/{name}", hooks.endpoint, methods=["POST"])])
    with serve_app(app) as url:
        hooks.url = url
        yield hooks
