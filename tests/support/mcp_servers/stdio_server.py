"""The test MCP server over stdio: ``python -m tests.support.mcp_servers.stdio_server``."""

from __future__ import annotations

from tests.support.mcp_servers.tools import build_server

if __name__ == "__main__":
    build_server().run("stdio")
