"""One Redis client per use, and errors that say which store cannot be reached.

A call is sent once. A connection that breaks while a call is in flight fails that call
with ``StoreUnavailable`` rather than sending it again (a write may already have been
applied, and an event appended twice would be a duplicate); the next call opens a new
connection, so a process reconnects by itself when Redis is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.maint_notifications import MaintNotificationsConfig

from agent_server.stores.base import StoreUnavailable
from agent_server.stores.redis_settings import RedisSettings, RedisTarget

UNREACHABLE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
"""What a lost or refused connection raises (``BusyLoadingError``, Redis reading its files after a restart, is one)."""


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
        # redis-py skips its check of a pooled connection before use while these are on (its default, "auto"):
        # after a Redis restart every idle connection, closed by the old server, would then fail its next call.
        maint_notifications_config=MaintNotificationsConfig(enabled=False),
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
