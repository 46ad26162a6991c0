"""The event log interface: append-only, per-run ``seq``, readable from a seq and followed live.

Implementations store and read; following is shared here. A follower holds the run's
current wake-up (``RunWakeup``) *before* reading, and every append replaces and sets it,
so an event appended between the read and the wait is never missed and nothing polls.

While a gateway runs the log (``running``), the log prunes the closed runs its
``Retention`` no longer keeps (retention.py), each implementation with its ``prune``.
"""

from __future__ import annotations

import abc
import os
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

from gateway.event_log.cancels import CancelAsk, CancelRequest, TakeCancel
from gateway.event_log.retention import Retention, logger
from gateway.event_log.wakeup import RunWakeup
from gateway.recording.events import Event

P = TypeVar("P")


@dataclass(frozen=True)
class _Page(Generic[P]):
    """One read of a followed run: closed (read first), the last seq read (None: nothing new), what was read."""

    closed: bool
    last_seq: int | None
    items: P
    latest: bool = False
    """Taken from what this process has appended, all of it: wait for the next append before reading again."""


_Reader = Callable[[str, int, bool], Awaitable[_Page[P]]]
"""Reads a page of a run after a seq. The flag (``current``): the follower has read since it began, or since a wait
that an append of this process ended; False at first and after SQLite's poll for other processes."""

INTERRUPTED = "interrupted: the process stopped before the run ended"
"""The ``error`` of the ``run_failed`` event that ``close_abandoned_runs`` appends."""

Adopt = Callable[[str], Awaitable[bool]]
"""Takes over a run whose writer died (claimed for this process already); False when it cannot, and the log
closes the run ``run_failed`` as interrupted instead."""


class EventLog(abc.ABC):
    """Where every step of every run is written as it happens."""

    def __init__(self, retention: Retention | None = None) -> None:
        self._wakeups: dict[str, RunWakeup] = {}
        self._closing = False
        self.retention = retention or Retention()

    @abc.abstractmethod
    async def append(self, event: Event) -> Event:
        """Store ``event`` as the run's next ``seq``; it is durable when this returns."""

    async def append_all(self, events: Sequence[Event]) -> AsyncGenerator[Event, None]:
        """Store ``events`` as their runs' next seqs, in order; each is yielded numbered once it is durable.

        What arrived together is stored together: the SQLite log commits them in one
        transaction (all or none). The default appends one at a time, so a failure comes
        after the events before it were yielded.
        """
        for event in events:
            yield await self.append(event)

    @abc.abstractmethod
    async def read(self, run_id: str, after_seq: int = -1, limit: int | None = None) -> list[Event]:
        """The run's events with ``seq > after_seq``, oldest first."""

    @abc.abstractmethod
    async def close_run(self, run_id: str) -> None:
        """Mark the run finished: followers stop once they have read everything."""

    @abc.abstractmethod
    async def is_closed(self, run_id: str) -> bool: ...

    @abc.abstractmethod
    async def close_abandoned_runs(self) -> list[str]:
        """Close the runs a previous process left open (it stopped mid-run): returns their ids.

        Each run that has events but was never closed gets a ``run_failed`` event (error
        ``INTERRUPTED``) and is closed, so that its followers end. Call it once, at start,
        and only when this process is the one gateway that writes to the log (the default
        embedded SQLite file): a run another live process is still writing would be cut.
        """

    async def abandoned_runs(self) -> list[str]:
        """The runs a process that stopped left open, for this one to take over (``claim_run`` each first).

        Same rule as ``close_abandoned_runs``: a log of one process answers them only for
        the one gateway that writes to it, at its start; a log of one process in memory has none.
        """
        return []

    async def claim_run(self, run_id: str) -> bool:
        """Become the writer of an abandoned run; False when it was closed or another process claimed it first.

        A log of one process has no one to race with: the run is this process's if it is still open.
        """
        return not await self.is_closed(run_id)

    async def request_cancel(self, run_id: str, request: CancelRequest) -> CancelAsk:
        """Leave a cancel for the process that writes ``run_id`` (cancels.py); a log of one process stores none."""
        return CancelAsk.UNSHARED

    @property
    def process_id(self) -> str:
        """This process as a writer of runs: what ``run_resumed`` says took a run over."""
        return f"{socket.gethostname()}:{os.getpid()}"

    @abc.abstractmethod
    async def open_run(self, run_id: str, *, owner: str | None = None) -> None:
        """Put the run in the index before its first event, with the caller it belongs to (``owner``).

        A run that is only appended to is indexed at its first event, without an owner.
        """

    async def has_run(self, run_id: str) -> bool:
        """Whether the log knows the run: it has events or was closed (a shared log: also once it was opened)."""
        return await self.is_closed(run_id) or bool(await self.read(run_id, -1, limit=1))

    @abc.abstractmethod
    async def run_owner(self, run_id: str) -> str | None:
        """The owner ``open_run`` recorded (None when none, or the run is unknown)."""

    @abc.abstractmethod
    async def list_runs(self, limit: int = 100, *, owner: str | None = None) -> list[str]:
        """Run ids, newest first; with ``owner``, only that owner's."""

    async def prune(self) -> list[str]:
        """Delete up to ``retention.batch`` closed runs that ``retention`` no longer keeps, oldest first: their ids.

        A log that cannot prune keeps everything (this default).
        """
        return []

    @asynccontextmanager
    async def running(self, adopt: Adopt | None = None, take_cancel: TakeCancel | None = None) -> AsyncIterator[None]:
        """Held while a gateway uses the log: it prunes what its retention no longer keeps (at start, then on
        schedule); a log shared by replicas also keeps their leases, hands the runs of dead ones to ``adopt``
        (or closes them, without one, or when it declines) and the cancels asked of this process's runs to
        ``take_cancel``."""
        async with anyio.create_task_group() as tasks:
            if not self.retention.keeps_all:
                tasks.start_soon(self._prune_on_schedule)
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()

    async def _prune_on_schedule(self) -> None:
        """Prune every ``retention.every_s``, a batch at a time; a failure is said and tried again next time, never
        raised into the gateway's task group."""
        while True:
            try:
                pruned = self.retention.batch
                while pruned >= self.retention.batch:  # a full batch: there may be more
                    pruned = len(await self.prune())
            except Exception as exc:
                logger.warning("could not prune the event log: %s; trying again in %g s", exc, self.retention.every_s)
            await anyio.sleep(self.retention.every_s)

    async def aclose(self) -> None:
        """Release the storage; followers still waiting end."""
        self._closing = True
        for wakeup in self._wakeups.values():
            wakeup.set()
        self._wakeups.clear()

    async def follow(self, run_id: str, after_seq: int = -1) -> AsyncGenerator[Event, None]:
        """Stored events after ``after_seq``, then live ones; ends when the run is closed."""
        async with aclosing(self._follow(run_id, after_seq, self._events_page)) as pages:
            async for events in pages:
                for event in events:
                    yield event

    def as_ndjson(self, run_id: str, after_seq: int = -1, follow: bool = False) -> AsyncGenerator[bytes, None]:
        """The run's events as NDJSON lines; with ``follow``, live until the run is closed.

        Each piece holds every line that was ready when it was read, so that a reader behind
        the writer gets them in one write rather than one write per line. Following, the
        pieces come straight from the generator that follows the run: a thousand open
        streams hold one generator each, not a chain of them.
        """
        if follow:
            return self._live_ndjson(run_id, after_seq)
        return self._stored_ndjson(run_id, after_seq)

    async def _stored_ndjson(self, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
        page = await self._ndjson_page(run_id, after_seq, False)
        if page.items:
            yield page.items

    def _live_ndjson(self, run_id: str, after_seq: int) -> AsyncGenerator[bytes, None]:
        """``as_ndjson`` with ``follow``: pieces of lines. A log that follows its own way overrides it (Redis)."""
        return self._follow(run_id, after_seq, self._ndjson_page)

    async def _follow(self, run_id: str, after_seq: int, read: _Reader[P]) -> AsyncGenerator[P, None]:
        """The items of what ``read`` finds after ``after_seq``, then of each append; ends when the run is closed."""
        current = False
        while not self._closing:
            wakeup = self._wakeup(run_id)
            page = await read(run_id, after_seq, current)
            if page.last_seq is not None:
                yield page.items
                after_seq = page.last_seq
                current = True
                if not page.latest:
                    continue
            elif page.closed:
                self._wakeups.pop(run_id, None)
                return
            current = await self._wait(wakeup)

    async def _events_page(self, run_id: str, after_seq: int, current: bool) -> _Page[list[Event]]:
        """Whether the run is closed, read first, then its events after ``after_seq``: closed and none means done."""
        closed = await self.is_closed(run_id)
        events = await self.read(run_id, after_seq)
        return _Page(closed, events[-1].seq if events else None, events)

    async def _ndjson_page(self, run_id: str, after_seq: int, current: bool) -> _Page[bytes]:
        """The same as NDJSON lines; a log that stores the JSON hands it on without parsing it."""
        page = await self._events_page(run_id, after_seq, current)
        return _Page(page.closed, page.last_seq, b"".join(event.to_json() + b"\n" for event in page.items))

    async def _wait(self, wakeup: RunWakeup) -> bool:
        """Wait for the next append (True once woken by one); SQLite bounds the wait to see other processes."""
        return await wakeup.wait()

    def _wakeup(self, run_id: str) -> RunWakeup:
        wakeup = self._wakeups.get(run_id)
        if wakeup is None:
            wakeup = self._wakeups[run_id] = RunWakeup()
        return wakeup

    def _notify(self, run_id: str) -> None:
        """Wake the run's followers; the next ones wait on a fresh event."""
        wakeup = self._wakeups.pop(run_id, None)
        if wakeup is not None:
            wakeup.set()
