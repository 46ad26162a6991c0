"""One SQLite connection shared by async code: the helper behind every SQLite store.

Blocking sqlite3 calls run in the database's own thread so the event loop never waits on
the disk. The thread takes the calls one at a time, in the order they were made, from a
queue: a busy store parks no threads of anyio's shared pool (which sync tools and
everything else calling ``to_thread`` use), and a call costs one hand-over each way, less
than ``anyio.to_thread`` with a limiter of one. A call that
has started finishes even if its caller is cancelled: the caller waits for it, then is
cancelled, and the result is dropped. Callers run on asyncio (as everything here does: uvicorn,
aiohttp), whose loop the thread wakes when a call is done.

The file runs in WAL mode, ``synchronous=NORMAL`` unless told otherwise: a crash of the
process loses nothing committed, a crash of the machine may lose the last moments
(``FULL`` survives that too, at the price of an fsync per commit).
"""

from __future__ import annotations

import asyncio
import functools
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import anyio
import anyio.lowlevel

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
        self._calls: queue.SimpleQueue[_Call[Any] | None] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
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
        """``fn(connection, *args)`` in the database's thread, after every earlier call has finished."""
        if self._conn is None:
            raise self._closed()
        return await self._in_thread(functools.partial(self._call, fn, args))

    async def aclose(self) -> None:
        """Close the connection once the calls before it have finished, and end the thread; closing twice is fine."""
        if self._worker is not None:
            await self._in_thread(self._close_connection)
        self.close()  # the thread has nothing left to run: it ends at once

    def close(self) -> None:
        """Close at once, from synchronous code (no call may be running), and end the thread."""
        self._close_connection()
        worker, self._worker = self._worker, None
        if worker is not None:
            self._calls.put(None)
            worker.join()

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        call = _Call(fn, asyncio.get_running_loop())
        if self._worker is None:
            self._worker = threading.Thread(target=self._serve, name=f"sqlite {self.path}", daemon=True)
            self._worker.start()
        self._calls.put(call)
        with anyio.CancelScope(shield=True):
            await call.done
        await anyio.lowlevel.checkpoint_if_cancelled()
        return call.outcome()

    def _call(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self._conn is None:  # closed by a call queued before this one
            raise self._closed()
        return fn(self._conn, *args)

    def _closed(self) -> RuntimeError:
        return RuntimeError(f"the {self.what} {self.path} is closed")

    def _serve(self) -> None:
        """The database's thread: the calls queued, in order, until ``close``."""
        while (call := self._calls.get()) is not None:
            call.run()


class _Call(Generic[T]):
    """One call handed to the database's thread; ``done`` resolves in the caller's event loop once it has run."""

    __slots__ = ("_error", "_fn", "_loop", "_result", "done")

    def __init__(self, fn: Callable[[], T], loop: asyncio.AbstractEventLoop) -> None:
        self._fn, self._loop = fn, loop
        self._result: T | None = None
        self._error: BaseException | None = None
        self.done: asyncio.Future[None] = loop.create_future()

    def run(self) -> None:
        try:
            self._result = self._fn()
        except BaseException as exc:  # the caller's to handle, whatever it is
            self._error = exc
        with suppress(RuntimeError):  # raised when the caller's event loop is closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._resolve)

    def _resolve(self) -> None:
        if not self.done.done():  # a task cancelled outside anyio's shield gave it up
            self.done.set_result(None)

    def outcome(self) -> T:
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]


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
