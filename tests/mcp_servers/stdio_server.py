"""The test MCP server over stdio: ``python -m tests.mcp_servers.stdio_server``."""

from __future__ import annotations

from tests.mcp_servers.tools import build_server

if __name__ == "__main__":
    build_server().run("stdio")
