"""``with_idle_timeout``: only the wait for the next item is timed, never the consumer's work between items."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

import anyio
import pytest

from gateway.calls.idle_timeout import IdleTimeout, with_idle_timeout

pytestmark = pytest.mark.anyio


async def _items(gaps: list[float]) -> AsyncGenerator[int, None]:
    """One item after each gap (seconds)."""
    for index, gap in enumerate(gaps):
        await anyio.sleep(gap)
        yield index


async def _read_into(got: list[int], items: AsyncGenerator[int, None]) -> None:
    async with aclosing(items) as reading:
        async for item in reading:
            got.append(item)


async def test_a_silent_source_ends_with_idle_timeout_after_the_items_before() -> None:
    got: list[int] = []
    started = anyio.current_time()
    with anyio.fail_after(10), pytest.raises(IdleTimeout) as caught:
        await _read_into(got, with_idle_timeout(_items([0, 0, 30]), 0.1))
    assert got == [0, 1] and caught.value.seconds == 0.1
    assert anyio.current_time() - started >= 0.09


async def test_the_consumers_work_between_items_is_not_timed() -> None:
    got: list[int] = []
    with anyio.fail_after(10):
        async with aclosing(with_idle_timeout(_items([0, 0, 0]), 0.05)) as items:
            async for item in items:
                await anyio.sleep(0.2)  # four times the idle timeout, between items
                got.append(item)
    assert got == [0, 1, 2]


async def test_a_consumers_own_cancel_scope_ends_the_iteration_between_items() -> None:
    """The consumer's scope is entered before the first item and left between two: nothing is left entered."""
    got: list[int] = []
    with anyio.fail_after(10):
        async with aclosing(with_idle_timeout(_items([0] * 5), 5.0)) as items:
            with anyio.move_on_after(0.1) as scope:
                async for item in items:
                    got.append(item)
                    await anyio.sleep(1.0)  # cut here by the consumer's scope
    assert scope.cancelled_caught and got == [0]


async def test_no_limit_passes_every_item_on() -> None:
    with anyio.fail_after(10):
        async with aclosing(with_idle_timeout(_items([0, 0.05, 0]), None)) as items:
            assert [item async for item in items] == [0, 1, 2]
