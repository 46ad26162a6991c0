"""Waiting for a condition instead of sleeping: bounded polling where no event exists to wait on.

The deadline is generous for a loaded 2-core machine; it is only reached when the condition
never comes true, and then the test fails saying what it waited for.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable

import anyio

DEADLINE_S = 10.0
POLL_S = 0.01
PROCESS_S = 90.0
"""How long a Python process may take to start, or to run a short job, when the machine is starved."""


async def until(condition: Callable[[], bool | Awaitable[bool]], what: str, timeout_s: float = DEADLINE_S) -> None:
    """Return once ``condition()`` (sync or async) is true; fail the test after ``timeout_s``."""
    deadline = anyio.current_time() + timeout_s
    while True:
        met = condition()
        if inspect.isawaitable(met):
            met = await met
        if met:
            return
        if anyio.current_time() > deadline:
            raise AssertionError(f"still waiting after {timeout_s:g} s for {what}")
        await anyio.sleep(POLL_S)


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = DEADLINE_S) -> None:
    """``until`` for synchronous code (a test thread talking to a server or process elsewhere)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout_s:g} s for {what}")
        time.sleep(POLL_S)
