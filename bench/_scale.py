"""What a burst of many streams needs of the machine and of the servers' settings, derived from its size.

One stream holds a connection from the client to the server in the middle (the gateway or the
reference relay) and one from it to an agent server, so the middle holds two descriptors per
stream and every process needs a connection cap, a connection pool and a listen backlog at
least as large as its share of the burst. Defaults that suit a few hundred streams (a server's
connection cap, the gateway's pool) refuse or queue the rest; the bench raises them to the
burst's size (never below the defaults), and says what it set.

Descriptors: a process may raise its soft limit up to its hard limit; only a process with
CAP_SYS_RESOURCE (root, outside a container that drops it) may raise the hard limit. Where the
hard limit is too low, the bench tries to raise it for itself and the servers it starts, and
where it may not, stops with a message saying what to raise.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path

from agent_server.http.limits import ServerLimits
from gateway.peers import PeerLimits

STREAMS_PER_AGENT = 2000
"""The default share of one agent-server process, so that the upstream is not what a burst measures."""

_SPARE_CONNECTIONS = 256
"""Connections each cap leaves beyond the streams: warm-up, readiness checks, lingering closes."""

_SERVER_DEFAULTS = ServerLimits()
_PEER_DEFAULTS = PeerLimits()
_OWN_FILES = 64
"""Descriptors a process needs besides its streams' connections (listeners, logs, stores, the loop's own,
the warm-up's pooled connections), with room to spare."""


@dataclass(frozen=True)
class Scale:
    """The settings a burst of ``streams`` spread over ``agents`` agent servers needs."""

    streams: int
    agents: int

    @property
    def per_agent(self) -> int:
        """The most streams one agent server holds (they are assigned round-robin)."""
        return math.ceil(self.streams / self.agents)

    @property
    def server_connections(self) -> int:
        """The gateway's (or relay's) connection cap: every stream's client and a margin, at least the default."""
        return max(_SERVER_DEFAULTS.max_connections, self.streams + _SPARE_CONNECTIONS)

    @property
    def pool_connections(self) -> int:
        """The gateway's pool to its agents: a connection per stream and a margin, at least the default."""
        return max(_PEER_DEFAULTS.max_connections, self.streams + _SPARE_CONNECTIONS)

    @property
    def agent_connections(self) -> int:
        """An agent server's connection cap: its share of the streams and a margin, at least the default."""
        return max(_SERVER_DEFAULTS.max_connections, self.per_agent + _SPARE_CONNECTIONS)

    @property
    def middle_files(self) -> int:
        """Descriptors of the gateway or relay: a connection from the client and one to an agent per stream (the
        caps may be higher: a connection past what the burst needs is not opened)."""
        return 2 * self.streams + _OWN_FILES

    @property
    def client_files(self) -> int:
        return self.streams + _OWN_FILES

    @property
    def loopback_connections(self) -> int:
        """Connections opened on loopback at once, each with an ephemeral port of the side that connects."""
        return 2 * self.streams


def default_agents(streams: int) -> int:
    return max(1, math.ceil(streams / STREAMS_PER_AGENT))


@dataclass(frozen=True)
class FileLimits:
    """RLIMIT_NOFILE (soft, hard) the servers are started with and the one the client runs with."""

    servers: tuple[int, int]
    client: tuple[int, int]
    raised_hard: bool
    """Whether the bench raised the hard limit it was started with."""


class LimitTooLow(RuntimeError):
    """The hard open-file limit cannot hold the burst and this process may not raise it."""


def file_limits(scale: Scale) -> FileLimits:
    """The limits the servers need (raising the hard one only where it is too low), or LimitTooLow saying what to do.

    Raising the hard limit is tried on this process, whose limits the servers inherit from it;
    the caller restores them at the end.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max(scale.middle_files, scale.client_files)
    if hard == resource.RLIM_INFINITY or hard >= needed:
        return FileLimits(servers=(soft, hard), client=(hard, hard), raised_hard=False)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, needed))
    except (ValueError, OSError):
        why = (
            "this process may not raise it (it is not root)"
            if os.geteuid() != 0
            else f"this process may not raise it (root without CAP_SYS_RESOURCE, as in a container; fs.nr_open "
            f"{_nr_open()})"
        )
        raise LimitTooLow(
            f"{scale.streams} streams need {needed} open files in the gateway (a connection from the client and "
            f"one to an agent per stream, and about {_OWN_FILES} of its own), but the hard RLIMIT_NOFILE is {hard} "
            f"and {why}: raise it where the bench starts (ulimit -Hn {needed} as root, LimitNOFILE= in systemd, "
            "nofile in /etc/security/limits.conf, docker run --ulimit nofile=N:N), or ask for at most "
            f"{(hard - _OWN_FILES) // 2} --streams"
        ) from None
    return FileLimits(servers=(needed, needed), client=(needed, needed), raised_hard=True)


def _nr_open() -> int:
    try:
        return int(Path("/proc/sys/fs/nr_open").read_text())
    except (OSError, ValueError):
        return 1 << 20


def ephemeral_ports() -> tuple[int, int] | None:
    """The kernel's range of ports for outgoing connections (None where it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    except (OSError, ValueError):
        return None
    return int(low), int(high)


def somaxconn() -> int | None:
    """The kernel's cap on a listen backlog (None where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        return None


def listen_overflows() -> int:
    """Connection attempts the kernel dropped so far because a listen backlog was full (TcpExt ListenOverflows)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return 0
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table.get("ListenOverflows", 0))
    return 0
