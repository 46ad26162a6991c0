"""Peers: agents the gateway can call, one interface over A2A-HTTP, in-process and MCP."""

from .a2a_http import A2AHttpPeer, HttpTimeouts
from .base import Peer, RawLine, StreamItem, StreamTooLarge
from .limits import PeerLimits
from .local import LocalAgentHost, LocalPeer
from .mcp import MCPConnection, MCPPeer

__all__ = [
    "A2AHttpPeer",
    "HttpTimeouts",
    "LocalAgentHost",
    "LocalPeer",
    "MCPConnection",
    "MCPPeer",
    "Peer",
    "PeerLimits",
    "RawLine",
    "StreamItem",
    "StreamTooLarge",
]
