"""The runs a gateway service owns: they live in its task group, and ``stop`` ends them all at shutdown.

A run started over HTTP (a turn, a tool call) runs in the service's task group, not in the
request, so it goes on when the client that started it disconnects (it can be read again
from the event log). Each run has its own cancel scope, registered while it runs, so
``stop`` can end the runs without cancelling whoever hosts the task group (the server's
lifespan). Tasks of the gateway's own A2A binding are registered with their own stop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

import anyio
from anyio.abc import TaskGroup

from gateway.service.errors import ShuttingDown

logger = logging.getLogger("gateway.service")

Stopper = Callable[[], Awaitable[None]]

SHUTDOWN_REASON = "the gateway is shutting down"
STOP_RUNS_TIMEOUT_S = 5.0


class ServiceRuns:
    """The task group of the service's runs, which runs are going, and how each one is stopped."""

    def __init__(self) -> None:
        self.active: set[str] = set()
        """Run ids started here and not ended (a run is known before its first event is written)."""
        self._stopping = False
        self._stops: dict[object, Stopper] = {}
        self._ended: anyio.Event | None = None
        self._tasks: TaskGroup | None = None

    async def __aenter__(self) -> ServiceRuns:
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tasks, self._tasks = self._tasks, None
        if tasks is not None:
            tasks.cancel_scope.cancel(SHUTDOWN_REASON)
            await tasks.__aexit__(None, None, None)

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def running(self) -> bool:
        """Whether runs can start here: the task group is up and ``stop`` was not called."""
        return self._tasks is not None and not self._stopping

    def task_group(self) -> TaskGroup:
        """Where a new run goes; ShuttingDown (503) once ``stop`` was called."""
        if self._stopping:
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")
        if self._tasks is None:
            raise RuntimeError("the gateway service is not running: use `async with service:` first")
        return self._tasks

    async def stop(self) -> None:
        """Cancel the runs still going and wait (bounded) for them to end; new ones are refused (503).

        A server calls this before it waits for its connections to close, so the NDJSON
        streams following those runs end with their last event instead of being cut.
        """
        self._stopping = True
        if not self._stops:
            return
        self._ended = anyio.Event()
        with anyio.move_on_after(STOP_RUNS_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                for stop in list(self._stops.values()):
                    group.start_soon(_quietly, stop)
                await self._ended.wait()

    @contextmanager
    def stoppable(self, stop: Stopper) -> Iterator[None]:
        """A run the service did not start itself (a task of its A2A binding) that ``stop`` ends by calling ``stop``.

        Refused with ShuttingDown (503) once the service is stopping.
        """
        if self._stopping:
            raise ShuttingDown(f"{SHUTDOWN_REASON}; try again when it is back")
        with self._registered(stop):
            yield

    def cancellable(self) -> _Cancellable:
        """A run's own cancel scope, cancelled by ``stop``; a run that begins after ``stop`` is cancelled at once."""
        return _Cancellable(self)

    @contextmanager
    def _registered(self, stop: Stopper) -> Iterator[None]:
        token = object()
        self._register(token, stop)
        try:
            yield
        finally:
            self._forget(token)

    def _register(self, token: object, stop: Stopper) -> None:
        self._stops[token] = stop

    def _forget(self, token: object) -> None:
        del self._stops[token]
        if not self._stops and self._ended is not None:
            self._ended.set()


class _Cancellable:
    """``ServiceRuns.cancellable``: an object rather than a generator, as every run going holds one."""

    __slots__ = ("_runs", "_scope")

    def __init__(self, runs: ServiceRuns) -> None:
        self._runs = runs
        self._scope = anyio.CancelScope()

    def __enter__(self) -> anyio.CancelScope:
        scope = self._scope.__enter__()
        if self._runs.stopping:
            scope.cancel(SHUTDOWN_REASON)
        self._runs._register(self, self.stop)
        return scope

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self._runs._forget(self)
        return bool(self._scope.__exit__(exc_type, exc, tb))

    async def stop(self) -> None:
        self._scope.cancel(SHUTDOWN_REASON)


async def _quietly(stop: Stopper) -> None:
    try:
        await stop()
    except Exception:
        logger.exception("stopping %r failed", stop)
