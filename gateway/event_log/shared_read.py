"""One read at a time, shared: the callers that arrive while a read is under way share the next one.

Each caller gets a value read after it asked (never an older one), yet a thousand callers that
ask at once cost two reads, not a thousand: the one under way when they came, and the one they
share. The service reads the registry's version this way before every request
(service/core.py), and the SQLite event log looks for other processes' writes this way for
its followers (event_log/sqlite.py): a burst of calls does not queue one store round trip each.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


class SharedRead(Generic[T]):
    """``await shared()``: the value of ``read()``, from a read that began after the call."""

    def __init__(self, read: Callable[[], Awaitable[T]]) -> None:
        self._read = read
        self._turn = anyio.Lock()
        self._next: _Read[T] | None = None

    async def __call__(self) -> T:
        while True:
            pending = self._next
            if pending is None:
                pending = self._next = _Read()
                await self._perform(pending)
            else:
                await pending.done.wait()
            if pending.ended:
                break
        if pending.error is not None:
            raise pending.error
        return pending.value  # type: ignore[return-value]  # ended without an error: it was read

    async def _perform(self, pending: _Read[T]) -> None:
        """Wait for the read under way, then read for everyone who joined ``pending`` meanwhile.

        If the caller doing it is cancelled first, the others are told to ask again.
        """
        try:
            async with self._turn:
                self._next = None  # who asks from now on waits for a read that begins later
                try:
                    pending.value = await self._read()
                except Exception as exc:
                    pending.error = exc
                pending.ended = True
        finally:
            if self._next is pending:  # cancelled before its turn: nobody else may join it
                self._next = None
            pending.done.set()


class _Read(Generic[T]):
    __slots__ = ("done", "ended", "error", "value")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.ended = False
        """The read was made (``value`` or ``error``); False once done: its caller was cancelled, ask again."""
        self.value: T | None = None
        self.error: Exception | None = None
