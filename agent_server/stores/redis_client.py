"""What every Redis store shares: the spec parsed, its settings, one client per use, and errors that say why.

A spec is ``redis://[USER:PASSWORD@]HOST[:PORT][/DB]`` (``rediss://`` for TLS), optionally
with ``?prefix=NAME``: every key a store writes starts with ``NAME:`` (default
``switchboard``), so several deployments can share one server. The settings (leases,
timeouts, pool size) have their one home in ``RedisSettings``.

A call is sent once. A connection that breaks while a call is in flight fails that call
with ``StoreUnavailable`` rather than sending it again (a write may already have been
applied, and an event appended twice would be a duplicate); the next call opens a new
connection, so a process reconnects by itself when Redis is back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from .base import StoreUnavailable

DEFAULT_PREFIX = "switchboard"
_PREFIX = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""What a lost or refused connection raises (``BusyLoadingError``, Redis reading its files after a restart, is one)."""


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


def connect(target: RedisTarget, settings: RedisSettings, *, blocking_reads: bool = False) -> redis.asyncio.Redis:
    """A client with its own pool; ``blocking_reads``: its calls may wait ``follow_block_s`` for data.

    Nothing is sent until the first call.
    """
    read_timeout = settings.command_timeout_s + (settings.follow_block_s if blocking_reads else 0.0)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        target.url,
        max_connections=settings.max_connections,
        timeout=settings.command_timeout_s,
        socket_connect_timeout=settings.connect_timeout_s,
        socket_timeout=read_timeout,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
    )
    return redis.asyncio.Redis(connection_pool=pool)


@contextmanager
def unavailable_as(what: str, target: RedisTarget) -> Iterator[None]:
    """Turn a lost or refused connection into StoreUnavailable naming the store and where it is."""
    try:
        yield
    except UNREACHABLE as exc:
        raise StoreUnavailable(
            f"the {what} at {target.shown} is unreachable ({type(exc).__name__}: {exc}); retry when it is back"
        ) from exc


def _hide_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:" if parts.username else ":"
    return urlunsplit((parts.scheme, f"{user}***@{host}", parts.path, parts.query, parts.fragment))
