"""Routes answered before the router: the same answers, route labels and refusals as through it."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_server.http.direct_routes import DirectRoutes

pytestmark = pytest.mark.anyio

SEEN_ROUTES: list[str] = []


async def _hello(request: Request) -> Response:
    if request.headers.get("x-refuse"):
        raise HTTPException(418, "refused")
    return JSONResponse({"route": request.scope["route"].path, "root": request.scope.get("root_path", "")})


async def _router_only(request: Request) -> Response:
    return JSONResponse({"via": "router"})


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return JSONResponse({"refused": exc.detail}, status_code=exc.status_code)


class _Labels:
    """What a middleware outside sees once the request is answered (the metrics' route label)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)
        SEEN_ROUTES.append(getattr(scope.get("route"), "path", "(unmatched)"))


def _app() -> Starlette:
    direct = [Route("/hello", _hello, methods=["POST"])]
    return Starlette(
        routes=[*direct, Route("/other", _router_only, methods=["POST"])],
        middleware=[
            Middleware(_Labels),
            Middleware(DirectRoutes, routes=direct, on_http_exception=_on_http_exception),
        ],
    )


@pytest.fixture
def client() -> httpx.AsyncClient:
    outer = Starlette(routes=[Mount("/mounted", _app()), Mount("/", _app())])
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=outer), base_url="http://test")


async def test_a_direct_route_is_answered_with_the_route_in_the_scope(client: httpx.AsyncClient) -> None:
    SEEN_ROUTES.clear()
    assert (await client.post("/hello")).json() == {"route": "/hello", "root": ""}
    assert (await client.post("/mounted/hello")).json() == {"route": "/hello", "root": "/mounted"}
    assert SEEN_ROUTES == ["/hello", "/hello"]


async def test_other_routes_and_methods_go_on_to_the_router(client: httpx.AsyncClient) -> None:
    SEEN_ROUTES.clear()
    assert (await client.post("/other")).json() == {"via": "router"}
    assert (await client.get("/hello")).status_code == 405
    assert (await client.post("/nowhere")).status_code == 404
    assert SEEN_ROUTES[:2] == ["/other", "/hello"]


async def test_an_http_exception_is_answered_by_the_apps_handler(client: httpx.AsyncClient) -> None:
    response = await client.post("/hello", headers={"x-refuse": "1"})
    assert (response.status_code, response.json()) == (418, {"refused": "refused"})


def test_a_route_with_parameters_is_refused() -> None:
    with pytest.raises(ValueError, match="fixed path"):
        DirectRoutes(_router_only, [Route("/tasks/{task_id}", _router_only)], _on_http_exception)
