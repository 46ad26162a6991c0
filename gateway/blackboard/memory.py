"""Boards in memory: for tests and a single process. A compare-and-set has no await inside, so it is atomic."""

from __future__ import annotations

import copy

from gateway.blackboard.base import Board, BoardStore
from gateway.errors import BoardConflict


class MemoryBoardStore(BoardStore):
    """Keeps deep copies, so what a caller holds never changes the stored board."""

    def __init__(self) -> None:
        self._boards: dict[str, Board] = {}

    async def get(self, name: str) -> Board | None:
        stored = self._boards.get(name)
        return copy.deepcopy(stored) if stored is not None else None

    async def compare_and_set(self, board: Board, expected_version: int) -> Board:
        stored = self._boards.get(board.name)
        if (stored.version if stored is not None else 0) != expected_version:
            raise BoardConflict(board.name, expected_version, copy.deepcopy(stored or Board(board.name)))
        written = Board(board.name, expected_version + 1, copy.deepcopy(board.entries), board.owner)
        self._boards[board.name] = written
        return copy.deepcopy(written)

    async def delete(self, name: str) -> None:
        self._boards.pop(name, None)
