"""Task stores: the interface, an in-memory store and a SQLite store, and ``open_store``."""

from __future__ import annotations

import sqlite3

from .base import StoreFull, TaskStore
from .memory import MemoryTaskStore
from .sqlite import SQLiteTaskStore


def open_store(spec: str) -> TaskStore:
    """``"memory"`` or ``"sqlite:PATH"`` (PATH relative to the working directory or absolute).

    Every way a spec can fail, including a file that cannot be opened, is a ValueError that says why.
    """
    if spec == "memory":
        return MemoryTaskStore()
    if spec.startswith("sqlite:"):
        path = spec.removeprefix("sqlite:")
        if not path:
            raise ValueError('a sqlite store needs a path, e.g. "sqlite:tasks.db"')
        try:
            return SQLiteTaskStore(path)
        except (OSError, sqlite3.Error) as exc:
            raise ValueError(f"cannot open the task store {path!r}: {exc}") from None
    raise ValueError(f'unknown task store {spec!r}; use "memory" or "sqlite:PATH"')


__all__ = ["MemoryTaskStore", "SQLiteTaskStore", "StoreFull", "TaskStore", "open_store"]
