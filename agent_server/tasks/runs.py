"""The runs of one task manager: which task ids have a writer now, and the live run of each.

A task id is claimed (``reserve``) by whatever writes its task: a send, from its check to its
run's end, or a repair of the stored task (an orphan closed, an idle task canceled). A second
claim is refused with 409: per task one writer at a time, so its ``seq`` has no gaps and no
duplicates. A claim kept for a run is let go with the run (``release``).
"""

from __future__ import annotations

from types import TracebackType
from typing import Generic, TypeVar

from agent_server.tasks.wakeup import Wakeup
from protocol import ErrorCode, ProtocolError

R = TypeVar("R")


class Runs(Generic[R]):
    """One manager's live runs, and the task ids claimed by a writer: a run, or a repair of the stored task."""

    def __init__(self) -> None:
        self._live: dict[str, R] = {}
        self._claimed: set[str] = set()
        self._ended = Wakeup()

    def get(self, task_id: str) -> R | None:
        return self._live.get(task_id)

    def all(self) -> list[R]:
        return list(self._live.values())

    def add(self, task_id: str, run: R) -> None:
        """``run`` is the live run of ``task_id``, which it has reserved (``keep``)."""
        self._live[task_id] = run

    def is_claimed(self, task_id: str) -> bool:
        return task_id in self._claimed

    def reserve(self, task_id: str, *, keep: bool = False) -> _Reservation:
        """Claim ``task_id`` for one writer (a second claim gets 409); ``keep`` hands it to the run."""
        return _Reservation(self._claimed, task_id, keep)

    def release(self, task_id: str) -> None:
        """The run on ``task_id`` is over: the id is free for the next send."""
        self._live.pop(task_id, None)
        self._claimed.discard(task_id)
        self._ended.notify()

    async def wait_all_finished(self) -> None:
        while self._live:
            await self._ended.wait()


class _Reservation:
    """``Runs.reserve``: a class, not a generator context manager, as it is entered once per send.
    The claim is let go on leaving, unless ``keep`` and the block went well."""

    def __init__(self, claimed: set[str], task_id: str, keep: bool) -> None:
        self.claimed, self.task_id, self.keep = claimed, task_id, keep

    def __enter__(self) -> None:
        if self.task_id in self.claimed:
            raise ProtocolError(
                ErrorCode.INVALID_REQUEST,
                f"task {self.task_id!r} is still working; wait for its final event or cancel it",
                http_status=409,
            )
        self.claimed.add(self.task_id)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is not None or not self.keep:
            self.claimed.discard(self.task_id)
