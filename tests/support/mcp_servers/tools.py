"""The test MCP server: an echo tool, a tool that reports progress, one that hangs, one that fails,
one that returns a binary resource and one whose image data is not base64.

``hang`` records its cancellation in ``CANCELLED`` (same process, streamable HTTP) and, when
``SWITCHBOARD_MCP_MARKERS`` names a directory, as a file named after its text in it (stdio,
another process).
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import anyio
import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CANCELLED: list[str] = []


def build_server() -> MCPServer:
    server = MCPServer("switchboard-test")

    @server.tool(description="Echo the text back.")
    async def echo(text: str) -> str:
        return f"echo: {text}"

    @server.tool(description="Count to n, reporting progress at each step.")
    async def count(text: str, ctx: Context, n: int = 3, delay: float = 0.02) -> str:
        for step in range(1, n + 1):
            await ctx.report_progress(step, n, f"step {step} of {text}")
            await anyio.sleep(delay)
        return f"counted {n} for {text}"

    @server.tool(description="Report progress once, then wait until cancelled.")
    async def hang(text: str, ctx: Context) -> str:
        await ctx.report_progress(1, None, f"started {text}")
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            CANCELLED.append(text)
            markers = os.environ.get("SWITCHBOARD_MCP_MARKERS")
            if markers:
                (Path(markers) / text).write_text("cancelled")
            raise
        return "never"

    @server.tool(description="Ends the server process at once (stdio only).")
    async def crash(text: str) -> str:
        os._exit(3)

    @server.tool(description="Always fails.")
    async def fail(text: str) -> str:
        raise ToolError(f"cannot do {text}")

    @server.tool(description="Return the text as an embedded binary resource.")
    async def blob(text: str) -> mcp_types.EmbeddedResource:
        data = base64.b64encode(text.encode()).decode()
        resource = mcp_types.BlobResourceContents(
            uri="file:///blob.bin", mime_type="application/octet-stream", blob=data
        )
        return mcp_types.EmbeddedResource(type="resource", resource=resource)

    @server.tool(description="Return an image whose data is not base64.")
    async def bad_image(text: str) -> mcp_types.ImageContent:
        return mcp_types.ImageContent(type="image", data="not base64 at all!", mime_type="image/png")

    return server
