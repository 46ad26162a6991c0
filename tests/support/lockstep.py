"""An agent that streams in lockstep with the test: it makes each chunk only once the test saw the line before.

That proves lines are streamed without any clock: a hop that held lines back (a buffer, a
flush at the end) would hold back the very line the agent waits for, and the agent would
fail the task after ``timeout_s`` instead of going on. The test calls ``seen()`` once for the
line that lets the first chunk come (e.g. ``run_started``), then once per chunk it receives.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator

import anyio

from agent_server import HostedAgent, TaskContext, TextChunk

TIMEOUT_S = 10.0


class Lockstep:
    def __init__(self, chunks: int, cost_usd: float = 0.001, timeout_s: float = TIMEOUT_S) -> None:
        self.chunks = chunks
        self.cost_usd = cost_usd
        self.timeout_s = timeout_s
        self._seen = threading.Semaphore(0)  # the agent may run in a server thread, the test in another

    def seen(self) -> None:
        """The test received a line: the agent may make its next chunk. Safe from any thread."""
        self._seen.release()

    def agent(self, name: str = "lockstep") -> HostedAgent:
        """``chunks`` text chunks ``chunk-<i> ``, each costing ``cost_usd``, each after the test's ``seen()``."""

        async def run(ctx: TaskContext) -> AsyncIterator[TextChunk]:
            for index in range(self.chunks):
                await self._wait_seen(index)
                yield TextChunk(f"chunk-{index} ", cost_usd=self.cost_usd)

        return HostedAgent(name, run, description="Streams a chunk each time the test has seen the one before.")

    async def _wait_seen(self, index: int) -> None:
        deadline = anyio.current_time() + self.timeout_s
        while not self._seen.acquire(blocking=False):
            if anyio.current_time() > deadline:
                raise TimeoutError(f"the line before chunk {index} never reached the test: something held it back")
            await anyio.sleep(0.005)
