"""The test MCP server as a streamable-HTTP Starlette app, to be served by uvicorn on loopback."""

from __future__ import annotations

from starlette.applications import Starlette

from tests.support.mcp_servers.tools import build_server


def build_app() -> Starlette:
    return build_server().streamable_http_app(streamable_http_path="/mcp")
