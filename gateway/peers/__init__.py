"""Peers: agents the gateway can call, one interface over A2A-HTTP, in-process and MCP.

The MCP peer (``gateway.peers.mcp``) is imported where an MCP target is first used, so the
MCP SDK costs nothing to a gateway that has none.
"""

from .a2a_http import A2AHttpPeer
from .base import Peer, RawLine, StreamItem, StreamTooLarge
from .http_client import PeerHttpClient, PeerResponse
from .limits import PeerLimits
from .local import LocalAgentHost, LocalPeer

__all__ = [
    "A2AHttpPeer",
    "LocalAgentHost",
    "LocalPeer",
    "Peer",
    "PeerHttpClient",
    "PeerLimits",
    "PeerResponse",
    "RawLine",
    "StreamItem",
    "StreamTooLarge",
]
