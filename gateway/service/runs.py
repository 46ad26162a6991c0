"""The runs a gateway service owns: they live in its task group, and ``stop`` ends them all at shutdown.

A run started over HTTP (a turn, a tool call) runs in the service's task group, not in the
request, so it goes on when the client that started it disconnects (it can be read again
from the event log). Each run has its own cancel scope, registered while it runs, so
``stop`` can end the runs without cancelling whoever hosts the task group (the server's
lifespan). Tasks of the gateway's own A2A binding are registered with their own stop.

A run also has a cancel of its own, found by its run id (``cancel``): the owner's cancel
through the API, or a client that asked for its run to end with its connection. The
cancellation carries the reason (who asked), which is what the run's ending events say.
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
RunCancel = Callable[[str], Awaitable[None]]
"""Cancels one run with a reason for a person (who asked, and how)."""

SHUTDOWN_REASON = "the gateway is shutting down"
STOP_RUNS_TIMEOUT_S = 5.0


class ServiceRuns:
    """The task group of the service's runs, which runs are going, and how each one is stopped."""

    def __init__(self) -> None:
        self.active: set[str] = set()
        """Run ids started here and not ended (a run is known before its first event is written)."""
        self._stopping = False
        self._stops: dict[object, Stopper] = {}
        self._cancels: dict[str, RunCancel] = {}
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

    def cancellable(self, run_id: str | None = None) -> _Cancellable:
        """A run's own cancel scope, cancelled by ``stop``; a run that begins after ``stop`` is cancelled at once.

        ``run_id``: the run ``cancel`` finds it by (a turn learns its id later: ``_Cancellable.name``).
        """
        return _Cancellable(self, run_id)

    def holds(self, run_id: str) -> bool:
        """Whether a run of this id runs here (in this process) and can be cancelled here."""
        return run_id in self._cancels

    async def cancel(self, run_id: str, reason: str) -> bool:
        """Cancel the run ``run_id`` if it runs here, with ``reason``; False when it does not (any more)."""
        cancel = self._cancels.get(run_id)
        if cancel is None:
            return False
        await cancel(reason)
        return True

    @contextmanager
    def named(self, run_id: str, cancel: RunCancel) -> Iterator[None]:
        """A run that ``cancel(run_id, reason)`` ends by calling ``cancel`` (a task of the A2A face or proxy)."""
        self._cancels[run_id] = cancel
        try:
            yield
        finally:
            if self._cancels.get(run_id) is cancel:
                del self._cancels[run_id]

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

    __slots__ = ("_run_id", "_runs", "_scope")

    def __init__(self, runs: ServiceRuns, run_id: str | None) -> None:
        self._runs = runs
        self._scope = anyio.CancelScope()
        self._run_id: str | None = None
        if run_id is not None:
            self.name(run_id)

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
        if self._run_id is not None and self._runs._cancels.get(self._run_id) == self.cancel:
            del self._runs._cancels[self._run_id]
        return bool(self._scope.__exit__(exc_type, exc, tb))

    def name(self, run_id: str) -> None:
        """The run id ``ServiceRuns.cancel`` finds this run by."""
        self._run_id = run_id
        self._runs._cancels[run_id] = self.cancel

    async def stop(self) -> None:
        self._scope.cancel(SHUTDOWN_REASON)

    async def cancel(self, reason: str) -> None:
        self._scope.cancel(reason)


async def _quietly(stop: Stopper) -> None:
    try:
        await stop()
    except Exception:
        logger.exception("stopping %r failed", stop)
