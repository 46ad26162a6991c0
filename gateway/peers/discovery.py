"""An http(s):// agent of any kind: its card says which binding it speaks, and that peer is used.

The card is read from ``/.well-known/agent-card.json``, else ``agent.json`` (older agents),
once: the binding it names is kept for the gateway's life.
The binding, in this order of preference: Switchboard's NDJSON binding (``NDJSON_BINDING``
in ``supportedInterfaces``), A2A JSON-RPC 1.0, JSON-RPC 0.3 (a JSON-RPC interface without a
version counts as 1.0, after those that say so), then HTTP+JSON 1.0 (likewise), then gRPC
1.0 (with the ``grpc`` extra installed; grpc.py). A card that declares no interface at all
is an older Switchboard agent's: NDJSON. Anything else (HTTP+JSON 0.3, gRPC without the
extra) is refused with ``no_binding``.

The gateway keeps to the host it was given: of an interface's URL it takes the path only,
on the scheme, host and port of the agent's URI (a card saying ``localhost`` or another
host leads nowhere else, and a card may not send the gateway's calls, and its token, to a
host the operator did not name). A gRPC interface's port is kept, on the URI's host; TLS
when the URI is https.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urljoin, urlsplit, urlunsplit

from agent_server.bindings import grpc_installed
from gateway.errors import AgentToolError, PeerHTTPError, PeerProtocolError
from gateway.peers.a2a_http import A2AHttpPeer
from gateway.peers.base import UNRESOLVED, OnSent, OnTask, Peer, StreamRead
from gateway.peers.http_client import PeerHttpClient
from gateway.peers.jsonrpc import JsonRpcPeer
from gateway.peers.limits import PeerLimits
from gateway.peers.rest import RestPeer
from gateway.uri import A2AHttpTarget
from protocol import (
    A2A_V03,
    A2A_V1,
    GRPC_BINDING,
    HTTP_JSON_BINDING,
    JSONRPC_BINDING,
    NDJSON_BINDING,
    AgentCard,
    Task,
    TaskSendParams,
    major_minor,
)

_JSONRPC_RANKS = {A2A_V1: 1, A2A_V03: 2, None: 3}
_HTTP_JSON_RANKS = {A2A_V1: 4, None: 5}
_GRPC_RANK = 6


class HttpAgentPeer(Peer):
    """The agent at an http(s):// URI, over the binding its card names (learnt on first use, kept after)."""

    binding = UNRESOLVED

    def __init__(
        self, target: A2AHttpTarget, client: PeerHttpClient, limits: PeerLimits, *, token: str | None = None
    ) -> None:
        self.uri = target.uri
        self._target = target
        self._client = client
        self._limits = limits
        self._token = token
        self._reader = A2AHttpPeer(target, client, limits, token=token)
        self._peer: Peer | None = None

    async def resolve(self) -> Peer:
        """The peer of the card's binding; where no card can be read, the NDJSON binding, as every call was before.

        An agent that publishes no card (404 at both paths) speaks NDJSON from then on; one
        whose card cannot be read now (unreachable, slow, broken) is asked again next call,
        and this call goes over NDJSON and fails or succeeds as such. A card that names no
        binding the gateway speaks fails the call (``no_binding``).
        """
        if self._peer is not None:
            return self._peer
        try:
            await self.card()
        except PeerProtocolError as exc:
            if exc.reason == "no_binding":
                raise
            return self._reader
        except PeerHTTPError as exc:
            if exc.status == 404:
                self._use(self._reader)
            return self._reader
        except AgentToolError:
            return self._reader
        assert self._peer is not None
        return self._peer

    async def card(self) -> AgentCard:
        """The agent's card, read now; the binding it names is the one used from then on."""
        card = await self._reader.card()
        self._use(self._peer_for(card))
        return card

    def _use(self, peer: Peer) -> None:
        self._peer = peer
        self.binding = peer.binding
        self.names_tasks = peer.names_tasks

    async def send(self, params: TaskSendParams, on_sent: OnSent | None = None, on_task: OnTask | None = None) -> Task:
        return await (await self.resolve()).send(params, on_sent, on_task)

    @asynccontextmanager
    async def subscribe(self, params: TaskSendParams) -> AsyncIterator[AsyncIterator[StreamRead]]:
        async with (await self.resolve()).subscribe(params) as items:
            yield items

    async def cancel(self, task_id: str) -> bool:
        return await (await self.resolve()).cancel(task_id)

    async def get(self, task_id: str) -> Task:
        return await (await self.resolve()).get(task_id)

    async def aclose(self) -> None:
        if self._peer is not None:
            await self._peer.aclose()

    def _peer_for(self, card: AgentCard) -> Peer:
        binding, version, url = choose_binding(card, self._target.base_url, self.uri)
        if binding == NDJSON_BINDING:
            target = A2AHttpTarget(uri=self.uri, base_url=url.rstrip("/"))
            return (
                self._reader
                if target == self._target
                else A2AHttpPeer(target, self._client, self._limits, token=self._token)
            )
        if binding == HTTP_JSON_BINDING:
            return RestPeer(self.uri, url, card, self._client, self._limits, token=self._token)
        if binding == GRPC_BINDING:
            from gateway.peers.grpc import GrpcPeer  # grpcio is an extra, loaded for the first gRPC agent

            secure = urlsplit(self._target.base_url).scheme == "https"
            return GrpcPeer(self.uri, url, card, self._limits, token=self._token, secure=secure)
        return JsonRpcPeer(self.uri, url, version, card, self._client, self._limits, token=self._token)


def choose_binding(card: AgentCard, base_url: str, uri: str) -> tuple[str, str, str]:
    """The binding to use, its protocol version and its URL (on ``base_url``'s origin); PeerProtocolError if none."""
    interfaces = card.interfaces()
    if not interfaces:
        return NDJSON_BINDING, A2A_V1, base_url
    ranked: list[tuple[int, str, str, str]] = []
    for interface in interfaces:
        version = major_minor(interface.protocol_version) if interface.protocol_version else None
        binding = interface.protocol_binding
        if binding == NDJSON_BINDING:
            ranked.append((0, binding, A2A_V1, interface.url))
        elif binding in (JSONRPC_BINDING, HTTP_JSON_BINDING):
            rank = (_JSONRPC_RANKS if binding == JSONRPC_BINDING else _HTTP_JSON_RANKS).get(version)
            if rank is not None:
                ranked.append((rank, binding, version or A2A_V1, interface.url))
        elif binding == GRPC_BINDING and _speaks_grpc(interface.protocol_version):
            ranked.append((_GRPC_RANK, binding, A2A_V1, interface.url))
    if not ranked:
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version or ''}".strip() for i in interfaces)
        raise PeerProtocolError(
            f"the card of {uri} offers no binding the gateway speaks ({offered}); it speaks Switchboard's NDJSON "
            f"binding, A2A JSON-RPC {A2A_V1} and {A2A_V03}, A2A HTTP+JSON {A2A_V1}, and gRPC {A2A_V1} with the grpc "
            "extra installed",
            reason="no_binding",
        )
    _, binding, version, url = min(ranked, key=lambda choice: choice[0])
    if binding == GRPC_BINDING:
        return binding, version, grpc_on_host(base_url, url)
    return binding, version, on_origin(base_url, url)


def _speaks_grpc(version: str | None) -> bool:
    """A gRPC interface of A2A 1.0 (0.3's service is another one), and grpcio and the stubs installed."""
    if version is not None and major_minor(version) != A2A_V1:
        return False
    return grpc_installed()


def grpc_on_host(base_url: str, url: str) -> str:
    """The ``host:port`` to call: the port of a gRPC interface's URL (``host:port`` or with a scheme), on
    ``base_url``'s host (its own port when the URL names none)."""
    origin = urlsplit(base_url)
    where = urlsplit(url if "://" in url else "//" + url)
    try:
        port = where.port or origin.port
    except ValueError:
        port = origin.port
    host = origin.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


def on_origin(base_url: str, url: str) -> str:
    """``url``'s path (and query) on the scheme, host and port of ``base_url``."""
    origin = urlsplit(base_url)
    where = urlsplit(urljoin(base_url + "/", url))
    return urlunsplit((origin.scheme, origin.netloc, where.path, where.query, ""))
