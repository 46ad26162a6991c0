"""Where a Redis store is and how it behaves: its spec parsed, and its settings (leases, timeouts, pool).

A spec is ``redis://[USER:PASSWORD@]HOST[:PORT][/DB]`` (``rediss://`` for TLS), optionally
with ``?prefix=NAME``: every key a store writes starts with ``NAME:`` (default
``switchboard``), so several deployments can share one server. ``RedisSettings`` is the
one home of the defaults. Nothing here imports the Redis client (redis_client.py does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_PREFIX = "switchboard"
_PREFIX = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class RedisSettings:
    """Leases, timeouts and the pool of the Redis stores; the one home of their defaults.

    ``lease_s``: how long a session lock, and the mark that a process is alive, outlive
    their last renewal (renewed every third of it), so a process that dies frees its
    sessions and leaves its runs to be closed by another one after at most this long.
    ``lock_wait_s``: how long a turn waits for a session another process holds.
    ``connect_timeout_s`` and ``command_timeout_s`` bound one connection attempt and one call.
    ``follow_block_s``: how long a reader following a stream waits in one call before it
    checks again whether the stream ended; ``reconnect_s``: how long such a reader keeps
    trying when the connection is lost before it fails. ``max_connections``: per pool
    (commands, and readers following streams, each have one).
    """

    lease_s: float = 5.0
    lock_wait_s: float = 60.0
    connect_timeout_s: float = 2.0
    command_timeout_s: float = 5.0
    follow_block_s: float = 5.0
    reconnect_s: float = 30.0
    max_connections: int = 1024

    def __post_init__(self) -> None:
        for name in (
            "lease_s",
            "lock_wait_s",
            "connect_timeout_s",
            "command_timeout_s",
            "follow_block_s",
            "reconnect_s",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")

    @property
    def renew_every_s(self) -> float:
        return self.lease_s / 3

    @property
    def lease_ms(self) -> int:
        return max(1, round(self.lease_s * 1000))


class RedisTarget(NamedTuple):
    """A parsed Redis spec: the URL the client connects to, the key prefix, and the URL to show (no password)."""

    url: str
    prefix: str
    shown: str


def parse_redis_spec(spec: str, what: str = "store") -> RedisTarget:
    """``redis://HOST:PORT/DB[?prefix=NAME]``; anything else is a ValueError naming ``what`` and the problem."""
    parts = urlsplit(spec)
    shown = _hide_password(spec)
    if parts.scheme.lower() not in ("redis", "rediss"):
        raise ValueError(f"the {what} {shown!r} is not a Redis URL (redis://HOST:PORT/DB or rediss://...)")
    if not parts.hostname:
        raise ValueError(f"the {what} {shown!r} names no host (redis://HOST:PORT/DB)")
    try:
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError:
        raise ValueError(f"the {what} {shown!r} has a port that is not a number") from None
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise ValueError(f"the {what} {shown!r}: the database after the port must be a number, not {database!r}")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    prefix = query.pop("prefix", DEFAULT_PREFIX)
    if not _PREFIX.match(prefix):
        raise ValueError(
            f"the {what} {shown!r}: prefix {prefix!r} is not valid (1-64 letters, digits, '_', '.', ':' or '-')"
        )
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
    return RedisTarget(url, prefix + ":", _hide_password(url))


def _hide_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:" if parts.username else ":"
    return urlunsplit((parts.scheme, f"{user}***@{host}", parts.path, parts.query, parts.fragment))
