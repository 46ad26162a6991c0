"""Peers: agents the gateway can call, one interface over HTTP (the NDJSON binding, A2A JSON-RPC and HTTP+JSON),
gRPC, in-process and MCP.

An http(s):// agent is an ``HttpAgentPeer``: its card names the binding, and the peer of
that binding (``A2AHttpPeer``, ``JsonRpcPeer``, ``RestPeer`` or, with the ``grpc`` extra, ``GrpcPeer``) is used.

The MCP peer (``gateway.peers.mcp``) is imported where an MCP target is first used, so the
MCP SDK costs nothing to a gateway that has none.

The names are imported on first use (PEP 562): a module that needs only ``gateway.peers.base``
does not load aiohttp with the HTTP peers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.lazy import lazy_exports

if TYPE_CHECKING:
    from gateway.peers.a2a_http import A2AHttpPeer as A2AHttpPeer
    from gateway.peers.base import (
        Peer as Peer,
        RawLine as RawLine,
        Resubscribed as Resubscribed,
        StreamItem as StreamItem,
        StreamTooLarge as StreamTooLarge,
        TextLine as TextLine,
    )
    from gateway.peers.discovery import HttpAgentPeer as HttpAgentPeer
    from gateway.peers.http_client import PeerHttpClient as PeerHttpClient, PeerResponse as PeerResponse
    from gateway.peers.jsonrpc import JsonRpcPeer as JsonRpcPeer
    from gateway.peers.limits import PeerLimits as PeerLimits
    from gateway.peers.local import LocalAgentHost as LocalAgentHost, LocalPeer as LocalPeer
    from gateway.peers.rest import RestPeer as RestPeer

__getattr__ = lazy_exports(__name__)
