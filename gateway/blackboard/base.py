"""A board: a JSON object several agents read and write, with one version for the whole board.

Every write names the version it read and is a compare-and-set: when the board moved on
meanwhile, the write is refused with ``BoardConflict``, which carries the board as it is
now, so the writer can read what changed and try again; no writer ever overwrites another.

``BoardStore`` is all a store must offer (memory and SQLite here; a shared store such as
Redis implements the same three methods): read a board, compare-and-set it, delete it.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Board:
    """A board as stored: ``version`` 0 is a board never written; ``owner`` who may see it (None: anyone)."""

    name: str
    version: int = 0
    entries: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """What the API and the agents' tools show (the owner is not shown)."""
        return {"board": self.name, "version": self.version, "entries": self.entries}


class BoardStore(abc.ABC):
    """Boards by name, each written only by compare-and-set on its version."""

    @abc.abstractmethod
    async def get(self, name: str) -> Board | None:
        """The stored board; None when it was never written (or was deleted)."""

    @abc.abstractmethod
    async def compare_and_set(self, board: Board, expected_version: int) -> Board:
        """Store ``board``'s entries and owner as version ``expected_version + 1`` if it is at ``expected_version``.

        ``expected_version`` 0 means the board must not exist yet. Returns the stored board;
        raises ``BoardConflict`` (with the current board) and writes nothing otherwise.
        """

    @abc.abstractmethod
    async def delete(self, name: str) -> None: ...

    async def close(self) -> None:
        """Release resources; the default has none."""
