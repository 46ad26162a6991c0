"""What the API registered (remote agents, agent tools), kept where every replica and the next start find it.

An entry is a kind (``agent`` or ``tool``), a name and what it takes to build the member
again without asking anyone (for an agent: its URL, its card, its token; for a tool: its
``[[tools]]`` fields, the agents it is attached to, its token). A removal is kept too, as
an entry without data, so an agent or tool of the configuration removed through the API
stays removed on every replica and after a restart. ``version`` changes with every
change: a replica compares it with the one it applied before each request, and reloads
the entries when it moved.

The entries hold credentials (tokens sent to agents): the store must be protected like
the gateway's configuration (docs/security.md).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["agent", "tool"]


@dataclass(frozen=True)
class Registration:
    """One entry; ``data`` None means the agent or tool of that name was removed."""

    kind: Kind
    name: str
    data: dict[str, Any] | None


class RegistryStore(abc.ABC):
    """Entries by kind and name, changed atomically: two replicas never both register one name."""

    @abc.abstractmethod
    async def register(self, kind: Kind, name: str, data: dict[str, Any]) -> bool:
        """Record the entry unless one of that kind and name is registered (a removal does not count); False then."""

    @abc.abstractmethod
    async def unregister(self, kind: Kind, name: str) -> None:
        """Record that the agent or tool ``name`` was removed (replacing its entry)."""

    @abc.abstractmethod
    async def entries(self) -> list[Registration]:
        """Every entry, removals included, in the order they were first made."""

    @abc.abstractmethod
    async def version(self) -> int:
        """A number that changes with every ``register`` or ``unregister`` that changed something."""

    async def close(self) -> None:
        """Release what the store holds; the default has nothing."""
