"""The console's files, read once from the package and served with headers that keep the page to itself.

The Content-Security-Policy lets the page load scripts, styles and data from the gateway
only (``'self'``) and be framed by nobody, so the token typed into it can only travel to
the gateway it came from; ``Referrer-Policy: no-referrer`` keeps run ids out of other sites' logs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

CONSOLE_PATH = "/ui"
_PAGE = ("index.html", "text/html; charset=utf-8")
_FILES = {"": _PAGE, "/": _PAGE} | {
    f"/{name}": (name, kind)
    for name, kind in (
        ("console.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
    )
}
HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-cache",
}


def is_console_path(path: str) -> bool:
    """The console's own files: public, since a browser's navigation carries no bearer token."""
    return path.startswith(CONSOLE_PATH) and path.removeprefix(CONSOLE_PATH) in _FILES


@cache
def _read(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def _endpoint(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    async def serve(request: Request) -> Response:
        return Response(_read(name), media_type=media_type, headers=HEADERS)

    return serve


def console_routes() -> list[Route]:
    """``GET /ui`` (the page) and each of its files."""
    return [
        Route(CONSOLE_PATH + suffix, _endpoint(name, kind), methods=["GET"]) for suffix, (name, kind) in _FILES.items()
    ]
