"""The blackboard: shared boards agents read and write with optimistic locking (a version per board)."""

from __future__ import annotations

import sqlite3

from agent_server.stores import parse_store_spec
from gateway.blackboard.base import Board, BoardStore
from gateway.blackboard.memory import MemoryBoardStore
from gateway.blackboard.shared import Blackboard, check_board_name, session_board
from gateway.blackboard.sqlite import SQLiteBoardStore
from gateway.blackboard.tools import blackboard_tools


def open_board_store(spec: str) -> BoardStore:
    """``"memory"`` or ``"sqlite:PATH"``; every way it can fail is a ValueError that says why."""
    kind, path = parse_store_spec(spec, what="blackboard store")
    if kind == "memory":
        return MemoryBoardStore()
    if kind == "redis":
        raise ValueError(f'the blackboard has no Redis store ({spec!r}); use "memory" or "sqlite:PATH"')
    assert path is not None
    try:
        return SQLiteBoardStore(path)
    except (OSError, sqlite3.Error) as exc:
        raise ValueError(f"cannot open the blackboard store {path!r}: {exc}") from None


__all__ = [
    "Blackboard",
    "Board",
    "BoardStore",
    "MemoryBoardStore",
    "SQLiteBoardStore",
    "blackboard_tools",
    "check_board_name",
    "open_board_store",
    "session_board",
]
