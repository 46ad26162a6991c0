"""Counters in Redis, shared by every replica: ``PREFIX:limits:...`` keys that expire with their window.

The prefix is the stores' (``?prefix=`` of the Redis spec), so two gateways on one Redis
with different prefixes count apart. ``INCR`` (a rate) and ``INCRBYFLOAT`` (dollars) are
atomic, so requests spread over replicas count against one limit.
"""

from __future__ import annotations

import math

from agent_server.stores.redis_client import connect, unavailable_as
from agent_server.stores.redis_settings import RedisSettings, RedisTarget, parse_redis_spec
from gateway.limits.counters import Counters


class RedisCounters(Counters):
    def __init__(self, spec: str, *, settings: RedisSettings | None = None) -> None:
        self.target: RedisTarget = parse_redis_spec(spec, "limits store")
        self._client = connect(self.target, settings or RedisSettings())

    def _key(self, key: str) -> str:
        return f"{self.target.prefix}limits:{key}"

    async def increment(self, key: str, expires_at: float) -> int:
        return int(await self._update(key, None, expires_at))

    async def add(self, key: str, amount: float, expires_at: float) -> float:
        return await self._update(key, amount, expires_at)

    async def _update(self, key: str, amount: float | None, expires_at: float) -> float:
        with unavailable_as("limits store", self.target):
            async with self._client.pipeline(transaction=True) as pipe:
                if amount is None:
                    pipe.incr(self._key(key))
                else:
                    pipe.incrbyfloat(self._key(key), amount)
                pipe.expireat(self._key(key), math.ceil(expires_at) + 1)
                total, _ = await pipe.execute()
        return float(total)

    async def read(self, key: str) -> float:
        with unavailable_as("limits store", self.target):
            found = await self._client.get(self._key(key))
        return float(found) if found is not None else 0.0

    async def aclose(self) -> None:
        await self._client.aclose()
