"""``RunWakeup``: a run's next append, for its followers; each holds it before it reads, the append sets it.

The SQLite log also has one per batch for the appenders that wait for its commit, and one for the
writer that waits for its turn. One is made for each append that someone waits for, and each wait
of a follower of the SQLite log is bounded (its poll for other processes), so both must be cheap:
it is a list of futures, and a bounded wait a timer on the loop. An ``anyio.Event`` looks up the
backend when it is made, and an ``anyio.move_on_after`` around its wait enters and leaves a cancel
scope, for every streamed chunk. The gateway runs on asyncio only (its HTTP client is aiohttp's);
a waiter's cancel scope still cancels its wait, as any await's.
"""

from __future__ import annotations

import asyncio


class RunWakeup:
    """Set once; use it in one event loop."""

    __slots__ = ("_futures", "is_set")

    def __init__(self) -> None:
        self.is_set = False
        self._futures: list[asyncio.Future[None]] = []

    def set(self) -> None:
        """Wake every task waiting, and every one that waits after."""
        self.is_set = True
        for future in self._futures:
            if not future.done():  # not cancelled
                future.set_result(None)
        self._futures.clear()

    async def wait(self, seconds: float | None = None) -> bool:
        """Wait until it is set, at most ``seconds`` (None: no limit); whether it is set."""
        if self.is_set:
            return True
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._futures.append(future)
        timer = None if seconds is None else loop.call_later(seconds, _expire, future)
        try:
            await future
        finally:
            if timer is not None:
                timer.cancel()
            if not self.is_set:  # the time ran out, or the waiter was cancelled
                self._futures.remove(future)
        return self.is_set


def _expire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
