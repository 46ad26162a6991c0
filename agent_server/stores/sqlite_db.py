"""One SQLite connection shared by async code: the helper behind every SQLite store.

Blocking sqlite3 calls run in worker threads (``anyio.to_thread``) so the event loop never
waits on the disk. Calls are serialized by the database's own ``CapacityLimiter(1)``:
waiting callers queue in the event loop, not as worker threads parked on a lock, so a
busy store never takes threads from anyio's shared default limiter (which sync tools and
everything else calling ``to_thread`` use). A call that has started finishes even if its
caller is cancelled; its result is then dropped.

The file runs in WAL mode, ``synchronous=NORMAL`` unless told otherwise: a crash of the
process loses nothing committed, a crash of the machine may lose the last moments
(``FULL`` survives that too, at the price of an fsync per commit).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


class SQLiteDatabase:
    """A connection to ``path`` with ``schema`` applied, used one call at a time through ``run``.

    ``what`` names the store in errors ("the task store tasks.db is closed"). The parent
    directory is created when missing. ``columns`` (table -> column -> declaration) are
    added to a file made by an older version whose tables lack them. ``checkpoint_pages`` is how
    many pages the WAL may hold before SQLite copies them back into the file (its own default:
    1000); more lets a page written by many commits be copied once. If the file cannot be set up (not a database, a
    PRAGMA or the schema fails), the connection is closed and the sqlite3 error raised.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        schema: str,
        what: str = "database",
        synchronous: Synchronous = "NORMAL",
        busy_timeout_s: float = 5.0,
        columns: dict[str, dict[str, str]] | None = None,
        checkpoint_pages: int | None = None,
    ) -> None:
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, not {synchronous!r}")
        self.path = str(path)
        self.what = what
        self._limiter = anyio.CapacityLimiter(1)
        in_memory = self.path == ":memory:"
        if not in_memory:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=busy_timeout_s)
        try:
            if not in_memory:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            if checkpoint_pages is not None:
                conn.execute(f"PRAGMA wal_autocheckpoint={int(checkpoint_pages)}")
            conn.executescript(schema)
            _add_missing_columns(conn, columns or {})
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    @property
    def closed(self) -> bool:
        return self._conn is None

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` in a worker thread, after every earlier call has finished."""
        return await anyio.to_thread.run_sync(self._call, fn, args, limiter=self._limiter)

    async def aclose(self) -> None:
        """Close the connection once the calls before it have finished; closing twice is fine."""
        await anyio.to_thread.run_sync(self.close, limiter=self._limiter)

    def close(self) -> None:
        """Close at once, from synchronous code (no call may be running)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self._conn is None:
            raise RuntimeError(f"the {self.what} {self.path} is closed")
        return fn(self._conn, *args)


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction taken at once (``BEGIN IMMEDIATE``): reads inside it see no other writer."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _add_missing_columns(conn: sqlite3.Connection, columns: dict[str, dict[str, str]]) -> None:
    for table, wanted in columns.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column, declaration in wanted.items():
            if column not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
