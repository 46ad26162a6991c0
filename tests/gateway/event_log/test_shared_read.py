"""SharedRead: callers that arrive during a read share the next one, and nobody gets a value read before it asked."""

from __future__ import annotations

import anyio
import pytest

from gateway.event_log.shared_read import SharedRead
from tests.support.waiting import until

pytestmark = pytest.mark.anyio


class _Store:
    """A read that returns how many reads began, each held until the test lets it finish."""

    def __init__(self) -> None:
        self.began = 0
        self.release = anyio.Event()
        self.fail: Exception | None = None

    async def read(self) -> int:
        self.began += 1
        number = self.began
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return number


async def test_callers_during_a_read_share_the_next_one_and_each_gets_a_read_begun_after_it_asked() -> None:
    store = _Store()
    shared = SharedRead(store.read)
    got: dict[str, int] = {}

    async def ask(name: str) -> None:
        got[name] = await shared()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "first")
        await until(lambda: store.began == 1, "the first read to begin")
        for name in ("b", "c", "d"):
            tg.start_soon(ask, name)
        await anyio.wait_all_tasks_blocked()
        assert store.began == 1  # they wait for the read under way, without starting one each
        store.release.set()
    assert got == {"first": 1, "b": 2, "c": 2, "d": 2}
    assert store.began == 2


async def test_an_error_of_the_read_reaches_every_caller_that_shared_it() -> None:
    store = _Store()
    shared = SharedRead(store.read)
    store.fail = RuntimeError("the store is down")
    errors: list[str] = []

    async def ask() -> None:
        with pytest.raises(RuntimeError) as caught:
            await shared()
        errors.append(str(caught.value))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        store.release.set()
    assert errors == ["the store is down"] * 3
    assert store.began == 1


async def test_when_the_caller_waiting_to_read_for_others_is_cancelled_they_ask_again() -> None:
    store = _Store()
    shared = SharedRead(store.read)
    got: dict[str, int] = {}

    async def ask(name: str) -> None:
        got[name] = await shared()

    waiting_to_read = anyio.CancelScope()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "under way")
        await until(lambda: store.began == 1, "the first read to begin")
        tg.start_soon(_in_scope, waiting_to_read, shared)  # it will read for those who come after it
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(ask, "joined")
        await anyio.wait_all_tasks_blocked()
        waiting_to_read.cancel()
        await anyio.wait_all_tasks_blocked()
        store.release.set()
    assert got == {"under way": 1, "joined": 2}
    assert store.began == 2


async def _in_scope(scope: anyio.CancelScope, shared: SharedRead[int]) -> None:
    with scope:
        await shared()
    assert scope.cancelled_caught
