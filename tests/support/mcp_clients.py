"""The MCP SDK's own client against a gateway's ``/mcp``, with a token as a desktop assistant would send it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.client import ConnectMode
from mcp.client.streamable_http import streamable_http_client

HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


@asynccontextmanager
async def gateway_mcp(url: str, token: str | None, mode: ConnectMode = "auto") -> AsyncIterator[Client]:
    """A connected client of the gateway at ``url``; ``mode`` ``legacy`` speaks the initialize handshake and
    ``notifications/cancelled`` (the 2025 wire), ``auto`` the newest wire both sides know."""
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http:
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
            yield client
