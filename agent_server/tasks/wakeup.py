"""``Wakeup``: wake every task waiting for "something new", with one primitive for the whole life of what it guards.

A stream follower waits for the next event; a publisher wakes all followers. Making a new
``anyio.Event`` per publish costs a backend lookup and an object each time, for every event
of every stream. On asyncio (what uvicorn runs) one
``asyncio.Event`` does it: ``notify`` sets it, which resolves every waiter's future, and
clears it at once for the next waiters. Elsewhere (trio) an ``anyio.Event`` is made only when
someone waits after the last notify. The backend is read at the first wait, so a ``Wakeup``
may be made outside the event loop that uses it.

Waiters follow the usual rule: look at the state, and wait only if there is nothing new;
since the event loop runs one task at a time, nothing can be notified between that look and
the wait.
"""

from __future__ import annotations

import asyncio

import anyio
import sniffio


class Wakeup:
    """Use it in one event loop."""

    def __init__(self) -> None:
        self._native: asyncio.Event | None = None
        self._portable: anyio.Event | None = None
        self._on_asyncio: bool | None = None

    def notify(self) -> None:
        """Wake every task waiting now; a task that waits later waits for the next notify."""
        if self._native is not None:
            self._native.set()
            self._native.clear()
        elif self._portable is not None:
            self._portable.set()
            self._portable = None

    async def wait(self) -> None:
        if self._on_asyncio is None:
            self._on_asyncio = sniffio.current_async_library() == "asyncio"
            if self._on_asyncio:
                self._native = asyncio.Event()
        if self._native is not None:
            await self._native.wait()
            return
        if self._portable is None:
            self._portable = anyio.Event()
        await self._portable.wait()
