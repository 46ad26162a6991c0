"""Registrations in Redis, seen by every gateway replica: a hash of entries and a version counter.

``PREFIX:registry`` maps ``KIND:NAME`` to the entry's JSON (``null`` for a removal);
``PREFIX:registry-order`` keeps the order entries were first made; ``PREFIX:registry-version``
counts changes. Each change is one Lua script, so two replicas never both register a name.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import orjson

from agent_server.stores.redis_client import connect, unavailable_as
from agent_server.stores.redis_settings import RedisSettings, RedisTarget, parse_redis_spec
from gateway.registrations.base import Kind, Registration, RegistryStore

# KEYS: registry, order, version; ARGV: field, data (the removal script: field)
_REGISTER = """
local found = redis.call('HGET', KEYS[1], ARGV[1])
if found and found ~= 'null' then return 0 end
if not found then redis.call('RPUSH', KEYS[2], ARGV[1]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('INCR', KEYS[3])
return 1
"""
_UNREGISTER = """
if not redis.call('HGET', KEYS[1], ARGV[1]) then redis.call('RPUSH', KEYS[2], ARGV[1]) end
redis.call('HSET', KEYS[1], ARGV[1], 'null')
redis.call('INCR', KEYS[3])
return 1
"""


class RedisRegistryStore(RegistryStore):
    def __init__(self, spec: str, *, settings: RedisSettings | None = None) -> None:
        self.target: RedisTarget = parse_redis_spec(spec, "registry")
        self._client = connect(self.target, settings or RedisSettings())
        self._register = self._client.register_script(_REGISTER)
        self._unregister = self._client.register_script(_UNREGISTER)
        prefix = self.target.prefix
        self._keys = [f"{prefix}registry", f"{prefix}registry-order", f"{prefix}registry-version"]

    async def register(self, kind: Kind, name: str, data: dict[str, Any]) -> bool:
        with self._unavailable():
            return bool(await self._register(keys=self._keys, args=[f"{kind}:{name}", orjson.dumps(data)]))

    async def unregister(self, kind: Kind, name: str) -> None:
        with self._unavailable():
            await self._unregister(keys=self._keys, args=[f"{kind}:{name}"])

    async def entries(self) -> list[Registration]:
        with self._unavailable():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.lrange(self._keys[1], 0, -1)
                pipe.hgetall(self._keys[0])
                order, found = await pipe.execute()
        entries = []
        for field in order:
            kind, name = field.decode().split(":", 1)
            raw = found.get(field)
            entries.append(Registration(kind, name, orjson.loads(raw) if raw is not None else None))
        return entries

    async def version(self) -> int:
        with self._unavailable():
            value: Any = await self._client.get(self._keys[2])
        return int(value or 0)

    async def close(self) -> None:
        await self._client.aclose()

    def _unavailable(self) -> AbstractContextManager[None]:
        return unavailable_as("registry", self.target)
