"""A scripted agent for tests: each message's text is a command saying what to do.

Commands (first word, then arguments):

- ``echo TEXT``: answers TEXT;
- ``stream N [INTERVAL_S] [COST_USD]``: N text chunks ``chunk-<i> ``, one every INTERVAL_S
  (default 0.01; 0: back to back, a turn of the event loop only after every 100th, as a
  model's chunks that arrived together), each costing COST_USD (default 0.001);
- ``sleep SECONDS``: waits, then answers ``slept``;
- ``ask QUESTION``: asks for input; the reply to it is answered with ``got: <reply>``;
- ``handoff TARGET [REASON]``: says so in a chunk, then hands off to TARGET;
- ``data JSON``: one data chunk;
- ``fail MESSAGE``: raises RuntimeError(MESSAGE).

A ``Probe`` records, thread-safely and with ``time.monotonic()`` stamps, which tasks started
and which saw cancellation, so tests can check that cancel really reached the agent's code,
even when the server runs in another thread. A cancel reaches a generator agent in one of two
ways: as the cancellation exception at the await it is in, or, when it finds the agent at a
``yield`` (the server busy with the item it yielded, e.g. writing it to its store), as the
generator being closed there (``GeneratorExit``) inside the canceled scope. Both count.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
import orjson

from agent_server.hosted import DataChunk, Handoff, HostedAgent, InputRequired, TaskContext, TextChunk


class Probe:
    """What the scripted agent went through, per task id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}
        self._starts: dict[str, int] = {}
        self._canceled: dict[str, float] = {}

    def record_start(self, task_id: str) -> None:
        with self._lock:
            self._started[task_id] = time.monotonic()
            self._starts[task_id] = self._starts.get(task_id, 0) + 1

    def starts(self, task_id: str) -> int:
        """How many times the agent's code began on ``task_id``: one per turn, never one per retried send."""
        with self._lock:
            return self._starts.get(task_id, 0)

    def record_cancel(self, task_id: str) -> None:
        with self._lock:
            self._canceled[task_id] = time.monotonic()

    def started_at(self, task_id: str) -> float | None:
        with self._lock:
            return self._started.get(task_id)

    def canceled_at(self, task_id: str) -> float | None:
        with self._lock:
            return self._canceled.get(task_id)

    def wait_canceled(self, task_id: str, timeout_s: float = 2.0) -> float | None:
        """Block (briefly polling) until the agent saw cancellation of ``task_id``; None on timeout."""
        deadline = time.monotonic() + timeout_s
        while (seen := self.canceled_at(task_id)) is None and time.monotonic() < deadline:
            time.sleep(0.002)
        return seen


_BURST = 100
"""``stream N 0`` gives the event loop a turn after this many chunks: the server keeps answering others."""


def scripted_agent(name: str = "scripted", probe: Probe | None = None) -> HostedAgent:
    """A HostedAgent that follows the commands above; pass a Probe to watch it."""
    watch = probe or Probe()

    async def run(ctx: TaskContext) -> AsyncGenerator[Any, None]:
        watch.record_start(ctx.task_id)
        try:
            async with aclosing(_perform(ctx)) as items:
                async for item in items:
                    yield item
        except anyio.get_cancelled_exc_class():
            watch.record_cancel(ctx.task_id)
            raise
        except GeneratorExit:
            if _in_canceled_scope():  # closed at a yield by a canceled send, not at the end of a handoff
                watch.record_cancel(ctx.task_id)
            raise

    return HostedAgent(name=name, handler=run, description="Does what each message's text says; for tests.")


async def _perform(ctx: TaskContext) -> AsyncGenerator[Any, None]:
    if len(ctx.history) >= 2 and ctx.history[-1].role == "agent" and _command(ctx.history[-2].text)[0] == "ask":
        yield f"got: {ctx.text}"
        return
    command, rest = _command(ctx.text)
    args = rest.split()
    if command == "echo":
        yield rest
    elif command == "stream":
        count = int(args[0]) if args else 3
        interval = float(args[1]) if len(args) > 1 else 0.01
        cost = float(args[2]) if len(args) > 2 else 0.001
        for index in range(count):
            if interval or index % _BURST == _BURST - 1:
                await anyio.sleep(interval)
            yield TextChunk(f"chunk-{index} ", cost_usd=cost)
    elif command == "sleep":
        await anyio.sleep(float(args[0]) if args else 3600.0)
        yield "slept"
    elif command == "ask":
        yield InputRequired(rest or "what next?")
    elif command == "handoff":
        target, _, reason = rest.partition(" ")
        yield f"handing over to {target}"
        yield Handoff(target=target, reason=reason or None, payload={"from": ctx.task_id})
    elif command == "data":
        yield DataChunk(orjson.loads(rest or "{}"))
    elif command == "fail":
        raise RuntimeError(rest or "scripted failure")
    else:
        raise ValueError(f"unknown command {command!r}; see agent_server.testing for the commands")


def _in_canceled_scope() -> bool:
    return anyio.current_effective_deadline() == -math.inf


def _command(text: str) -> tuple[str, str]:
    command, _, rest = text.strip().partition(" ")
    return command.lower(), rest.strip()
