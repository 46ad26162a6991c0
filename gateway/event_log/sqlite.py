"""The SQLite event log: one row per event in a WAL-mode file, committed before ``append`` returns.

Appends made while a commit is under way share the next transaction (group commit): the
first appender to find no commit running writes the batch (``BEGIN IMMEDIATE`` ...
``COMMIT``, one call in the database's thread), and hands the batch that gathered meanwhile
to that batch's first appender, so nobody writes for others for longer than one commit; the
batch's other appenders wait only for its commit to end (one wake-up each). Every ``append``
returns only once its own event is committed, so a process killed with SIGKILL loses
nothing already appended; a commit that fails fails every append of its batch. A waiting
appender is shielded from cancellation until its batch is written (one commit at most).
``append_all`` puts several events in one batch at once (the lines of one peer read).
``open_run`` and ``close_run`` join the batches the same way (the runs a batch opens are
written before its events, the runs it closes after them): a thousand calls that start
together cost a few commits, not a thousand.

``synchronous`` is the durability level: ``NORMAL`` (the default) survives the death of the
process; ``FULL`` survives power loss too, at the price of an fsync per commit (per batch).

The ``seq`` is taken inside the write transaction from the primary-key index, so several
writers, even in several processes, never hand out the same one. Followers in this
process are woken by appends like the memory log's; to see appends made by another
process they also re-read every ``cross_process_poll_s`` seconds. For a run this process
writes, that re-read is first one look, shared by every follower that asks meanwhile, at
whether another connection has written to the file at all (``PRAGMA data_version``) and,
only if one has, to which of these runs: a thousand idle followers cost one query per poll,
not a thousand.

Calls go through ``agent_server.stores.SQLiteDatabase``, like the task store's: the
database's own thread, one call at a time on one connection, taken from a queue in order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Literal

import anyio
import orjson

from agent_server.stores.sqlite_db import SQLiteDatabase, write_transaction
from gateway.event_log.base import INTERRUPTED, EventLog, _Page
from gateway.event_log.retention import Retention
from gateway.event_log.shared_read import SharedRead
from gateway.event_log.wakeup import RunWakeup
from gateway.recording.events import Event, EventType, now_ms

_MAX_INTEGER = 2**63 - 1
RECENT_LINES = 4
"""Per open run, the NDJSON lines of the commits by this process kept for its followers: those of its last
commit, and of the commits before it within its last ``RECENT_LINES`` lines. A live follower is rarely more
than a commit behind, so more lines would cost memory per stream and spare few reads of the file."""
CHECKPOINT_PAGES = 10_000
"""WAL pages between checkpoints: concurrent runs each dirty their own page per commit, and a
checkpoint copies each page back once however many commits dirtied it, so checkpoints further apart
than SQLite's default (1,000 pages) make appends of many concurrent runs cheaper; the WAL file
grows to this many pages in return."""
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    timestamp_ms INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    closed INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    closed_ms INTEGER
);
"""


class SQLiteEventLog(EventLog):
    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        cross_process_poll_s: float = 0.5,
        retention: Retention | None = None,
    ) -> None:
        super().__init__(retention)
        self.path = str(path)
        self.cross_process_poll_s = cross_process_poll_s
        self._gathering: _Batch | None = None
        self._writing = False
        self._recent: dict[str, _Recent] = {}  # per open run: its last lines committed here
        self._data_version: int | None = None  # PRAGMA data_version at the last look for other connections' writes
        self._touched: set[str] = set()  # runs of ``_recent`` that another connection wrote to (or closed) too
        self._look_for_others = SharedRead(self._others_wrote)
        self._db = SQLiteDatabase(
            self.path,
            schema=_SCHEMA,
            what="event log",
            synchronous=synchronous,
            busy_timeout_s=10.0,
            columns={"runs": {"owner": "TEXT", "closed_ms": "INTEGER"}},
            checkpoint_pages=CHECKPOINT_PAGES,
        )

    async def append(self, event: Event) -> Event:
        return (await self._appended((event,)))[0]

    async def append_all(self, events: Sequence[Event]) -> AsyncGenerator[Event, None]:
        """All in the next commit: a stream's lines read together cost one transaction, not one each."""
        for stored in await self._appended(events):
            yield stored

    async def _appended(self, events: Sequence[Event]) -> list[Event]:
        """``events`` in the next batch, returned numbered once that batch is committed."""
        batch = self._batch()
        index = len(batch.events)
        batch.events.extend(events)
        await self._committed(batch)
        assert batch.stored is not None
        return batch.stored[index : index + len(events)]

    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        # an SQLite integer has 64 bits; a seq past them is past every event, as in the memory log
        rows = await self._db.run(_read, run_id, min(after_seq, _MAX_INTEGER), -1 if limit is None else limit)
        return [Event.from_dict(orjson.loads(body)) for (body,) in rows]

    async def close_run(self, run_id: str) -> None:
        batch = self._batch()
        batch.closed.append(run_id)
        await self._committed(batch)

    async def is_closed(self, run_id: str) -> bool:
        return await self._db.run(_is_closed, run_id)

    async def close_abandoned_runs(self) -> list[str]:
        run_ids = await self._db.run(_close_abandoned_runs, INTERRUPTED)
        for run_id in run_ids:
            self._notify(run_id)
        return run_ids

    async def abandoned_runs(self) -> list[str]:
        return await self._db.run(_abandoned)

    async def open_run(self, run_id: str, *, owner: str | None = None) -> None:
        batch = self._batch()
        batch.opened.append((run_id, owner))
        await self._committed(batch)
        self._recent.setdefault(run_id, _Recent())

    async def run_owner(self, run_id: str) -> str | None:
        return await self._db.run(_run_owner, run_id)

    async def list_runs(self, limit: int = 100, *, owner: str | None = None) -> list[str]:
        return await self._db.run(_list_runs, limit, owner)

    async def prune(self) -> list[str]:
        retention = self.retention
        return await self._db.run(_prune, retention.closed_before_ms(now_ms()), retention.max_runs, retention.batch)

    async def aclose(self) -> None:
        await super().aclose()
        await self._db.aclose()

    async def _events_page(self, run_id: str, after_seq: int, current: bool) -> _Page[list[Event]]:
        closed, rows = await self._db.run(_page, run_id, min(after_seq, _MAX_INTEGER))
        return _Page(closed, rows[-1][0] if rows else None, [Event.from_dict(orjson.loads(body)) for _, body in rows])

    async def _ndjson_page(self, run_id: str, after_seq: int, current: bool) -> _Page[bytes]:
        """The stored JSON as it is, no event parsed or serialised again; the lines just committed without a read.

        A follower that carries on from where one of the run's recent commits here began (it
        read up to the commit before) takes the lines from memory; once ``current``, it then
        waits for the next append.
        The first read and the poll for other processes count as ``current`` for a run this
        process writes (or opened: it waits for its first event) when no other connection wrote
        to it. Otherwise (another process's appends, a gap, a follower that fell behind, a run
        written elsewhere) the file is read.
        """
        recent = self._recent.get(run_id)
        if recent is not None and not current:  # the first read, or the poll: the file only if another wrote the run
            await self._look_for_others()
            current = run_id not in self._touched
        if recent is not None and not recent.pieces and current:  # opened here, nothing committed yet: wait for it
            return _Page(False, None, b"", latest=True)
        if recent is not None and recent.pieces:
            last = recent.last
            if current and last == after_seq:  # it has every line this process committed
                return _Page(False, None, b"", latest=True)
            lines = recent.after(after_seq)
            if lines is not None:
                return _Page(False, last, lines, latest=current)
        closed, rows = await self._db.run(_page, run_id, min(after_seq, _MAX_INTEGER))
        return _Page(closed, rows[-1][0] if rows else None, b"".join(body + b"\n" for _, body in rows))

    async def _wait(self, wakeup: RunWakeup) -> bool:
        return await wakeup.wait(self.cross_process_poll_s)

    async def _others_wrote(self) -> None:
        """Add to ``_touched`` the runs written here that another connection has written to or closed since."""
        last_seqs = {run_id: recent.last for run_id, recent in self._recent.items()}
        self._data_version, touched = await self._db.run(_touched_by_others, self._data_version, last_seqs)
        self._touched.update(touched)

    def _batch(self) -> _Batch:
        """The batch that the next commit writes, which a new write joins."""
        batch = self._gathering
        if batch is None:
            batch = self._gathering = _Batch()
        return batch

    async def _committed(self, batch: _Batch) -> None:
        """Wait until ``batch`` is committed, writing it when its turn comes; its error raised to each of its writes."""
        with anyio.CancelScope(shield=True):  # the write is in a batch: it is written; wait for it
            if batch.writer:  # another of its writes commits it: one wait, for its end
                await batch.done.wait()
            else:
                batch.writer = True
                if self._writing:
                    await batch.turn.wait()
                await self._write(batch)
        if batch.error is not None:
            raise batch.error

    async def _write(self, batch: _Batch) -> None:
        """Commit ``batch`` (its writers wait), then give the turn to the batch gathered meanwhile."""
        self._writing = True
        if self._gathering is batch:
            self._gathering = None
        try:
            batch.stored = await self._db.run(_append_all, batch.events, batch.opened, batch.closed)
        except Exception as exc:  # every write of the batch raises it
            batch.error = exc
        finally:
            batch.done.set()
            following = self._gathering
            if following is None:
                self._writing = False
            else:
                following.turn.set()
        runs: dict[str, list[Event]] = {}
        for event in batch.stored or ():
            runs.setdefault(event.run_id, []).append(event)
        for run_id, events in runs.items():
            recent = self._recent.get(run_id)
            if recent is None:
                recent = self._recent[run_id] = _Recent()
            recent.add(events[0].seq, events[-1].seq, b"\n".join([event.to_json() for event in events]) + b"\n")
        closed = batch.closed if batch.error is None else []
        for run_id in closed:
            self._recent.pop(run_id, None)
            self._touched.discard(run_id)
        for run_id in runs.keys() | closed:
            self._notify(run_id)


class _Recent:
    """A run's last NDJSON lines committed by this process, of consecutive seqs up to ``last`` (-1: none yet):
    those of its last commit, whatever its size (the lines of one big peer read), and of the commits before
    it within its last ``RECENT_LINES`` lines.

    Each commit's lines are one bytes object, and the seq it starts at is kept apart: bytes and ints are
    not tracked by the cyclic garbage collector, tuples are, and a thousand open runs held 16 each. Both are
    lists: a deque takes 760 bytes even when empty, and a run holds only a few commits.
    """

    __slots__ = ("last", "pieces", "starts")

    def __init__(self) -> None:
        self.last = -1
        self.pieces: list[bytes] = []
        self.starts: list[int] = []

    def add(self, first: int, last: int, lines: bytes) -> None:
        """The lines of seqs ``first`` to ``last``, committed together."""
        if first != self.last + 1:  # another process appended in between: only what follows is consecutive
            self.pieces.clear()
            self.starts.clear()
        self.pieces.append(lines)
        self.starts.append(first)
        self.last = last
        while len(self.starts) > 1 and last - self.starts[1] >= RECENT_LINES:
            del self.pieces[0], self.starts[0]

    def after(self, seq: int) -> bytes | None:
        """Every line held after ``seq`` when they begin with a commit's first line, else None."""
        for index, start in enumerate(self.starts):
            if start == seq + 1:
                return b"".join(self.pieces[index:])
        return None


class _Batch:
    """Runs opened, events appended and runs closed while a commit was under way, written in the next transaction."""

    __slots__ = ("closed", "done", "error", "events", "opened", "stored", "turn", "writer")

    def __init__(self) -> None:
        self.opened: list[tuple[str, str | None]] = []
        self.events: list[Event] = []
        self.closed: list[str] = []
        self.stored: list[Event] | None = None
        self.error: Exception | None = None
        self.writer = False
        """Whether one of its writes commits it: the first, once its turn comes; the others wait for ``done``."""
        self.turn = RunWakeup()
        """Set when the commit before this batch has ended: its writer writes it."""
        self.done = RunWakeup()


def _append_all(
    conn: sqlite3.Connection, events: list[Event], opened: list[tuple[str, str | None]], closed: list[str]
) -> list[Event]:
    """One transaction: the runs opened, then the events appended (numbered, returned), then the runs closed."""
    with write_transaction(conn):
        for run_id, owner in opened:
            _open_run(conn, run_id, owner)
        stored = _insert(conn, events)
        for run_id in closed:
            _close_run(conn, run_id)
        return stored


def _touched_by_others(
    conn: sqlite3.Connection, seen_version: int | None, last_seqs: dict[str, int]
) -> tuple[int, list[str]]:
    """The file's data_version, and when another connection committed since ``seen_version``, the runs of
    ``last_seqs`` (run -> the last seq this process committed) that hold a later seq or were closed."""
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    if version == seen_version:
        return version, []
    touched = []
    for run_id, last_seq in last_seqs.items():
        (stored,) = conn.execute("SELECT COALESCE(MAX(seq), -1) FROM events WHERE run_id = ?", (run_id,)).fetchone()
        if stored > last_seq or _is_closed(conn, run_id):
            touched.append(run_id)
    return version, touched


def _abandoned(conn: sqlite3.Connection) -> list[str]:
    """The runs not closed that have events, oldest first."""
    rows = conn.execute(
        "SELECT run_id FROM runs WHERE closed = 0"
        " AND EXISTS (SELECT 1 FROM events WHERE events.run_id = runs.run_id) ORDER BY rowid"
    ).fetchall()
    return [run_id for (run_id,) in rows]


def _close_abandoned_runs(conn: sqlite3.Connection, reason: str) -> list[str]:
    with write_transaction(conn):
        run_ids = _abandoned(conn)
        for run_id in run_ids:
            _insert(conn, [Event.create(EventType.RUN_FAILED, run_id, error=reason, error_type="Interrupted")])
            conn.execute("UPDATE runs SET closed = 1, closed_ms = ? WHERE run_id = ?", (now_ms(), run_id))
    return run_ids


def _prune(conn: sqlite3.Connection, closed_before_ms: int | None, max_runs: int | None, batch: int) -> list[str]:
    """Delete up to ``batch`` closed runs, oldest first: closed before ``closed_before_ms`` (a run closed before
    the column was added counts from its creation), or older than the newest ``max_runs`` runs."""
    with write_transaction(conn):
        rows = conn.execute(
            "SELECT run_id FROM runs WHERE closed = 1 AND ("
            " (? IS NOT NULL AND COALESCE(closed_ms, created_ms) < ?)"
            " OR (? IS NOT NULL AND rowid < (SELECT rowid FROM runs ORDER BY rowid DESC LIMIT 1 OFFSET ?)))"
            " ORDER BY rowid LIMIT ?",
            (closed_before_ms, closed_before_ms, max_runs, (max_runs or 1) - 1, batch),
        ).fetchall()
        conn.executemany("DELETE FROM events WHERE run_id = ?", rows)
        conn.executemany("DELETE FROM runs WHERE run_id = ?", rows)
    return [run_id for (run_id,) in rows]


def _read(conn: sqlite3.Connection, run_id: str, after_seq: int, limit: int) -> list[tuple[bytes]]:
    return conn.execute(
        "SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?", (run_id, after_seq, limit)
    ).fetchall()


def _page(conn: sqlite3.Connection, run_id: str, after_seq: int) -> tuple[bool, list[tuple[int, bytes]]]:
    """Whether the run is closed, read first, then its events after ``after_seq`` (seq, JSON), in one call."""
    closed = _is_closed(conn, run_id)
    rows = conn.execute(
        "SELECT seq, body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq", (run_id, after_seq)
    ).fetchall()
    return closed, rows


def _close_run(conn: sqlite3.Connection, run_id: str) -> None:
    conn.execute(
        "INSERT INTO runs (run_id, created_ms, closed, closed_ms) VALUES (?, ?, 1, ?)"
        " ON CONFLICT (run_id) DO UPDATE SET closed = 1, closed_ms = COALESCE(closed_ms, excluded.closed_ms)",
        (run_id, now_ms(), now_ms()),
    )


def _is_closed(conn: sqlite3.Connection, run_id: str) -> bool:
    row = conn.execute("SELECT closed FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return bool(row and row[0])


def _open_run(conn: sqlite3.Connection, run_id: str, owner: str | None) -> None:
    conn.execute("INSERT OR IGNORE INTO runs (run_id, created_ms, owner) VALUES (?, ?, ?)", (run_id, now_ms(), owner))


def _run_owner(conn: sqlite3.Connection, run_id: str) -> str | None:
    row = conn.execute("SELECT owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row[0] if row else None


def _list_runs(conn: sqlite3.Connection, limit: int, owner: str | None) -> list[str]:
    if owner is None:
        rows = conn.execute("SELECT run_id FROM runs ORDER BY rowid DESC LIMIT ?", (limit,)).fetchall()
    else:
        rows = conn.execute(
            "SELECT run_id FROM runs WHERE owner = ? ORDER BY rowid DESC LIMIT ?", (owner, limit)
        ).fetchall()
    return [run_id for (run_id,) in rows]


def _insert(conn: sqlite3.Connection, events: Sequence[Event]) -> list[Event]:
    """Append ``events`` as their runs' next seqs, inside the caller's write transaction; returns them numbered.

    One statement inserts them all (``executemany``, less per event than one ``execute`` each).
    """
    following: dict[str, int] = {}  # a run's next seq, once read in this transaction
    started: list[tuple[str, int]] = []  # the runs whose first event this is, for the index
    stored: list[Event] = []
    rows: list[tuple[str, int, str, int, bytes]] = []
    for event in events:
        run_id = event.run_id
        seq = following.get(run_id)
        if seq is None:
            (seq,) = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE run_id = ?", (run_id,)
            ).fetchone()
            if seq == 0:
                started.append((run_id, now_ms()))
        following[run_id] = seq + 1
        numbered = event.with_seq(seq)
        stored.append(numbered)
        rows.append((run_id, seq, numbered.type, numbered.timestamp_ms, numbered.to_json()))
    conn.executemany("INSERT INTO events (run_id, seq, type, timestamp_ms, body) VALUES (?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT OR IGNORE INTO runs (run_id, created_ms) VALUES (?, ?)", started)
    return stored
