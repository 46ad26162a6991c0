"""``RunWakeup``: a wait ends when it is set, or when its bound runs out; a waiter that leaves is forgotten."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from gateway.event_log.wakeup import RunWakeup

pytestmark = pytest.mark.anyio


async def test_set_wakes_every_waiter_and_every_later_one() -> None:
    wakeup = RunWakeup()
    woken: list[bool] = []

    async def waiter() -> None:
        woken.append(await wakeup.wait(60.0))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(waiter)
            task_group.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert woken == []
            wakeup.set()
        assert woken == [True, True]
        assert await wakeup.wait(60.0) is True  # set already: no wait


async def test_a_bounded_wait_ends_unset_and_leaves_nothing_behind() -> None:
    wakeup = RunWakeup()
    started = anyio.current_time()
    with anyio.fail_after(10):
        assert await wakeup.wait(0.05) is False
    assert anyio.current_time() - started >= 0.04  # the bound, not at once
    assert wakeup._futures == []


async def test_a_cancelled_waiter_is_forgotten_and_the_others_still_woken() -> None:
    wakeup = RunWakeup()
    woken: list[bool] = []

    async def waiter() -> None:
        woken.append(await wakeup.wait())

    with anyio.fail_after(10):
        async with anyio.create_task_group() as outer:
            outer.start_soon(waiter)
            async with anyio.create_task_group() as leaving:
                leaving.start_soon(waiter)
                await anyio.wait_all_tasks_blocked()
                leaving.cancel_scope.cancel()
            assert len(wakeup._futures) == 1  # the one still waiting
            wakeup.set()
        assert woken == [True]
