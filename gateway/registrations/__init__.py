"""The registry store: agents and tools registered through the API, on memory, SQLite or Redis."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from agent_server.stores import parse_store_spec
from gateway.registrations.base import Kind, Registration, RegistryStore
from gateway.registrations.memory import MemoryRegistryStore
from gateway.registrations.sqlite import SQLiteRegistryStore

if TYPE_CHECKING:
    from agent_server.stores.redis_settings import RedisSettings


def open_registry(spec: str, *, redis: RedisSettings | None = None) -> RegistryStore:
    """``"memory"``, ``"sqlite:PATH"`` or ``"redis://..."``; a spec that cannot be used is a ValueError saying why."""
    kind, path = parse_store_spec(spec, what="registry")
    if kind == "memory":
        return MemoryRegistryStore()
    if kind == "redis":
        from gateway.registrations.redis import RedisRegistryStore

        return RedisRegistryStore(spec, settings=redis)
    assert path is not None
    try:
        return SQLiteRegistryStore(path)
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"cannot open the registry {path!r}: {exc}") from None


__all__ = ["Kind", "MemoryRegistryStore", "Registration", "RegistryStore", "SQLiteRegistryStore", "open_registry"]
