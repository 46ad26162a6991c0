"""Registrations in this process only: gone at a restart, invisible to other replicas (the memory default)."""

from __future__ import annotations

import copy
from typing import Any

from gateway.registrations.base import Kind, Registration, RegistryStore


class MemoryRegistryStore(RegistryStore):
    def __init__(self) -> None:
        self._entries: dict[tuple[Kind, str], dict[str, Any] | None] = {}
        self._version = 0

    async def register(self, kind: Kind, name: str, data: dict[str, Any]) -> bool:
        if self._entries.get((kind, name)) is not None:
            return False
        self._entries[(kind, name)] = copy.deepcopy(data)
        self._version += 1
        return True

    async def unregister(self, kind: Kind, name: str) -> None:
        self._entries[(kind, name)] = None
        self._version += 1

    async def entries(self) -> list[Registration]:
        return [Registration(kind, name, copy.deepcopy(data)) for (kind, name), data in self._entries.items()]

    async def version(self) -> int:
        return self._version
