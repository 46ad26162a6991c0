"""Leases in Redis: the mark that a process is alive, and the loop that keeps renewing what a process holds.

A process that stops renewing (killed, frozen, cut off from Redis) loses its marks after
``lease_s``: another process may then take over what it held. A renewal that fails is
logged and tried again at the next tick; nothing here gives up while the process runs.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from contextlib import suppress

import anyio
import redis.asyncio

from agent_server.stores.base import StoreUnavailable
from agent_server.stores.redis_client import UNREACHABLE
from agent_server.stores.redis_settings import RedisSettings

logger = logging.getLogger("switchboard.redis")


class Liveness:
    """This process's mark of life, ``PREFIX:alive:ID``, which expires ``lease_s`` after its last renewal."""

    def __init__(self, client: redis.asyncio.Redis, prefix: str, settings: RedisSettings) -> None:
        self.id = uuid.uuid4().hex[:16]
        self._client = client
        self._prefix = prefix
        self._settings = settings

    def key(self, process_id: str | None = None) -> str:
        return f"{self._prefix}alive:{process_id or self.id}"

    async def renew(self) -> None:
        await self._client.set(self.key(), b"1", px=self._settings.lease_ms)

    async def is_alive(self, process_id: str) -> bool:
        return bool(await self._client.exists(self.key(process_id)))

    async def forget(self) -> None:
        """At a clean stop: others need not wait for the lease to run out."""
        with anyio.move_on_after(self._settings.command_timeout_s, shield=True):
            with suppress(*UNREACHABLE):
                await self._client.delete(self.key())


async def renew_forever(renew: Callable[[], Awaitable[None]], every_s: float, what: str) -> None:
    """Call ``renew`` every ``every_s`` seconds until cancelled; a failure is logged and the next tick tries again."""
    failing = False
    while True:
        try:
            await renew()
        except (StoreUnavailable, *UNREACHABLE) as exc:
            if not failing:
                logger.warning("%s: cannot renew its leases (%s); trying again every %.2f s", what, exc, every_s)
            failing = True
        else:
            if failing:
                logger.warning("%s: renewing its leases again", what)
            failing = False
        await anyio.sleep(every_s)
