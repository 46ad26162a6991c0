"""Routes answered by one ASGI frame, before Starlette's exception middleware and router.

Starlette reaches an endpoint through its exception middleware, a router that tries each
route's pattern in turn, the route, and the request-response wrapper with its own exception
handling: several frames and closures for every request. A route at a fixed path whose
endpoint answers every refusal itself (``responses.guarded``) needs none of that, and the
routes a client calls most (the NDJSON binding's sends) are such routes. ``DirectRoutes``,
the innermost middleware, so behind the app's authentication, browser rules and metrics,
looks the request's method and path up in a dict and calls the endpoint; everything else
goes on to the router. What the router would have told the rest of the app is set as it
would have: the matched route and endpoint in the scope (the metrics' route label), and an
``HTTPException`` the endpoint lets out is answered by the app's handler for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

HttpExceptionHandler = Callable[[Request, Exception], Awaitable[Response]]


class DirectRoutes:
    """ASGI middleware: requests for ``routes`` (fixed paths, no parameters) go straight to their endpoints."""

    def __init__(self, app: ASGIApp, routes: Sequence[Route], on_http_exception: HttpExceptionHandler) -> None:
        for route in routes:
            if route.param_convertors:
                raise ValueError(f"{route.path} has parameters: only a route at a fixed path is answered directly")
        self.app = app
        self.on_http_exception = on_http_exception
        self._routes = {(method, route.path): route for route in routes for method in route.methods or ()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._routes.get((scope["method"], _route_path(scope))) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        scope["route"] = route
        scope["endpoint"] = route.endpoint
        request = Request(scope, receive)
        try:
            response: Response = await route.endpoint(request)
        except HTTPException as exc:
            response = await self.on_http_exception(request, exc)
        await response(scope, receive, send)


def _route_path(scope: Scope) -> str:
    """The path below the app's root, as Starlette's router matches it (an app mounted inside another)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path != root and path[len(root)] == "/":
        return path[len(root) :]
    return path
