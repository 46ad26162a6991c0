"""Talking standard A2A to our servers in tests: raw JSON-RPC bodies and SSE answers, and the real a2a-sdk client.

``sdk_client`` reads the card with the SDK and keeps only the JSON-RPC interface of one
version (as a server of that version alone would offer), so the client speaks that
version; ``agent_and_gateway`` serves one agent directly and behind a gateway whose swarm
starts with it, for tests that check both faces.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory

from agent_server import HostedAgent, create_app
from gateway.service import create_gateway_app
from tests.support.gateway_service import remote_first_service
from tests.support.servers import serve_app

V1 = {"A2A-Version": "1.0"}


def rpc(method: str, params: Any, rpc_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}


def sse_results(response: httpx.Response) -> list[dict[str, Any]]:
    """The ``result`` of each JSON-RPC response an SSE answer holds."""
    return [orjson.loads(line[6:])["result"] for line in response.text.splitlines() if line.startswith("data: ")]


async def sdk_client(http: httpx.AsyncClient, base_url: str, version: str, *, streaming: bool) -> Client:
    """The a2a-sdk client for the agent at ``base_url``, speaking JSON-RPC ``version`` (1.0 or 0.3)."""
    card = await A2ACardResolver(http, base_url).get_agent_card()
    keep = [i for i in card.supported_interfaces if i.protocol_binding == "JSONRPC" and i.protocol_version == version]
    assert keep, f"the card offers JSON-RPC {version}"
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(keep)
    return ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)


@contextmanager
def agent_and_gateway(agent: HostedAgent) -> Iterator[dict[str, str]]:
    """``agent`` on loopback and a gateway in front of it (its remote starting agent): their URLs by face."""
    with serve_app(create_app(agent)) as server:
        with serve_app(create_gateway_app(remote_first_service(server, name=agent.name))) as gateway:
            yield {"server": server, "gateway": gateway}
