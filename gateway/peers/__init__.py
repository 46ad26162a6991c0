"""Peers: agents the gateway can call, one interface over HTTP (the NDJSON binding, A2A JSON-RPC), in-process and MCP.

An http(s):// agent is an ``HttpAgentPeer``: its card names the binding, and the peer of
that binding (``A2AHttpPeer`` or ``JsonRpcPeer``) is used.

The MCP peer (``gateway.peers.mcp``) is imported where an MCP target is first used, so the
MCP SDK costs nothing to a gateway that has none.
"""

from .a2a_http import A2AHttpPeer
from .base import Peer, RawLine, Resubscribed, StreamItem, StreamTooLarge, TextChunk
from .discovery import HttpAgentPeer
from .http_client import PeerHttpClient, PeerResponse
from .jsonrpc import JsonRpcPeer
from .limits import PeerLimits
from .local import LocalAgentHost, LocalPeer

__all__ = [
    "A2AHttpPeer",
    "HttpAgentPeer",
    "JsonRpcPeer",
    "LocalAgentHost",
    "LocalPeer",
    "Peer",
    "PeerHttpClient",
    "PeerLimits",
    "PeerResponse",
    "RawLine",
    "Resubscribed",
    "StreamItem",
    "StreamTooLarge",
    "TextChunk",
]
