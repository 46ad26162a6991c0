"""A per-item idle timeout for async streams: the deadline restarts with every item.

It replaces an overall read timeout on streams: a stream that keeps talking is never cut,
one that falls silent for ``seconds`` is. Only the wait for the next item is timed, not
the consumer's work between items.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeVar

import anyio

from protocol import SwitchboardError

T = TypeVar("T")


class IdleTimeout(SwitchboardError, TimeoutError):
    """No item arrived within ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no data for {seconds:g} s")
        self.seconds = seconds


async def with_idle_timeout(items: AsyncIterator[T], seconds: float | None) -> AsyncGenerator[T, None]:
    """Yield ``items``; raise IdleTimeout when the next one takes longer than ``seconds`` (None: no limit)."""
    while True:
        with anyio.move_on_after(seconds if seconds is not None else float("inf")) as scope:
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
        if scope.cancelled_caught:
            raise IdleTimeout(seconds or 0.0)
        yield item
        del item  # not held while the next is awaited: an idle stream keeps none of its last read
