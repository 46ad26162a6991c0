"""One send on one task, as a run: its phase, its events, and its steps from the agent's call to its final line.

A run moves through its phases one way only, all in ``Run._move``:

- ``WORKING``: the agent runs; a cancel stops it (its code sees the cancellation at once).
- ``RECORDING``: the outcome is decided and its end is being recorded, shielded and bounded;
  a cancel now comes too late, and does not cut the recording short.
- ``FINISHED``: the final line is out and stored (or given up on), and the task id is free
  again for the next send.

A run that never got to work (the manager stopped as it started) goes from ``WORKING``
straight to ``FINISHED``. Either way its final status is set once, by ``record_end``.

Per task there is at most one run at a time (``tasks.runs``): one writer, so ``seq`` has no
gaps and no duplicates.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import anyio
import anyio.lowlevel
import orjson

from agent_server.hop import HopAccount
from agent_server.hosted import HostedAgent, TaskContext
from agent_server.stores.base import TaskStore
from agent_server.tasks.outputs import Outcome, interpret, reply_message
from agent_server.tasks.runs import Runs
from agent_server.tasks.wakeup import Wakeup
from agent_server.telemetry import metrics
from agent_server.telemetry.tasks import handler_span
from protocol import (
    ArtifactEvent,
    ArtifactFold,
    HandoffEvent,
    Message,
    StatusEvent,
    StreamEvent,
    Task,
    TaskState,
    TaskStatus,
    parse_stream_event,
)

logger = logging.getLogger("agent_server")

CANCELED_ON_SHUTDOWN = "canceled: the server is shutting down"


class Phase(Enum):
    """Where a run is; see the module docstring."""

    WORKING = "working"
    RECORDING = "recording"
    FINISHED = "finished"


_NEXT: dict[Phase, frozenset[Phase]] = {
    Phase.WORKING: frozenset({Phase.RECORDING, Phase.FINISHED}),
    Phase.RECORDING: frozenset({Phase.FINISHED}),
    Phase.FINISHED: frozenset(),
}


@dataclass(eq=False)
class Run:
    """One send on one task: the live task snapshot, the events of this send, and its phase.

    Events are never changed once published: followers, the store and the HTTP stream share them.
    The run keeps each event as its JSON (``encoded``) and hands the event itself to the
    followers there are (``followers``, what each has not taken yet): models kept for the
    whole run would be tracked objects that every garbage collection of a long stream walks
    again. A follower that starts late reads the events before it back from their JSON.
    The artifact chunks of the send go through an ``ArtifactFold`` into ``task``, folded in
    when someone looks (``current``): the text of a long answer is joined once.

    ``scope`` is the cancel scope the run's steps run in (``execute``): its own in the
    manager's task group, or the shielded one of a caller that runs it in its own task.
    """

    task: Task
    context: TaskContext
    first_seq: int
    scope: anyio.CancelScope
    agent: HostedAgent
    store: TaskStore
    runs: Runs[Run]
    owner: str | None = None
    phase: Phase = field(default=Phase.WORKING, init=False)
    cancel_reason: str | None = None
    closing_message: Message | None = None
    encoded: list[bytes] = field(default_factory=list)
    followers: list[list[StreamEvent]] = field(default_factory=list)
    changed: Wakeup = field(default_factory=Wakeup)
    push: Callable[[StreamEvent], None] | None = None
    """Hands each published event to the task's webhooks (agent_server/push/sender.py); None: it has none."""
    fold: ArtifactFold = field(init=False)
    account: HopAccount = field(init=False)
    """The task's deadline and budget, and what the handler's agent calls spent (agent_server/hop.py)."""

    def __post_init__(self) -> None:
        self.fold = ArtifactFold(self.task.artifacts)
        self.account = HopAccount(self.context.limits)

    # The events.

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.encoded)

    def current(self) -> Task:
        """The live task with every artifact chunk published so far."""
        self.fold.artifacts  # noqa: B018 - reading it folds in what was published since
        return self.task

    def join(self, after_seq: int) -> list[StreamEvent]:
        """A new follower's list: the events after ``after_seq`` read back from their JSON, then each one published."""
        missed = self.encoded[max(after_seq + 1 - self.first_seq, 0) :]
        pending = [parse_stream_event(orjson.loads(body)) for body in missed]
        self.followers.append(pending)
        return pending

    def leave(self, pending: list[StreamEvent]) -> None:
        """Stop handing events to ``pending`` (found by identity: lists compare by content)."""
        self.followers = [other for other in self.followers if other is not pending]

    def publish(self, event: StreamEvent) -> None:
        """Hand ``event`` to the followers (not to the store: ``append`` does both)."""
        self.encoded.append(event.encoded)
        for pending in self.followers:
            pending.append(event)
        if self.push is not None:
            self.push(event)
        self.changed.notify()

    async def append(self, event: StreamEvent) -> None:
        """Publish ``event`` and store it."""
        self.publish(event)
        await self.store.append_event(self.task.id, event)

    async def follow(self, pending: list[StreamEvent]) -> AsyncGenerator[list[StreamEvent], None]:
        """The events a joined follower (``pending``) gets, as they come, through the final one; a list per wake-up."""
        try:
            while True:
                if pending:
                    batch = pending.copy()
                    pending.clear()
                    yield batch
                    if batch[-1].final:
                        return
                    continue
                await self.changed.wait()
        finally:
            self.leave(pending)

    def status_line(self, *, final: bool = False) -> StatusEvent:
        """The run's next line: the task's status now (the one it was made with, or the one set at its end)."""
        status = self.task.status
        metrics.record_task_state(self.agent.name, status.state.value)
        logger.info("task %s agent=%s state=%s", self.task.id, self.agent.name, status.state.value)
        return StatusEvent(seq=self.next_seq, id=self.task.id, status=status, final=final)

    # The phases.

    def cancel(self, reason: str) -> None:
        """Stop the agent, if it still works; once the outcome is decided, this is too late and does nothing."""
        if self.phase is not Phase.WORKING:
            return
        if self.cancel_reason is None:
            self.cancel_reason = reason
        self.scope.cancel()

    async def wait_finished(self) -> None:
        """Until the run's end is recorded (its final line stored, its task id free again)."""
        while self.phase is not Phase.FINISHED:
            await self.changed.wait()

    def _move(self, to: Phase) -> None:
        """The one place the phase changes, forward only; a finished run lets its task id go."""
        if to not in _NEXT[self.phase]:
            raise RuntimeError(f"task {self.task.id}: a run does not go from {self.phase.value} to {to.value}")
        self.phase = to
        if to is Phase.FINISHED:
            self.runs.release(self.task.id)
            self.changed.notify()

    # The steps.

    async def execute(self, finish_timeout_s: float) -> None:
        """Run the agent, then record the end, shielded and bounded by ``finish_timeout_s``; inside ``scope``."""
        outcome = Outcome(TaskState.CANCELED)
        try:
            with handler_span(self.agent.name, self.task.id, self.task.session_id):
                outcome = await self._drive()
        finally:
            if self.cancel_reason is not None:
                # Canceled, whatever the agent made of it: one that swallowed the cancellation
                # and returned ends the drive normally, with the outcome of a finished send.
                outcome = Outcome(TaskState.CANCELED)
            if outcome.state is TaskState.CANCELED and outcome.message is None:
                outcome = Outcome(TaskState.CANCELED, Message.agent(self.cancel_reason or CANCELED_ON_SHUTDOWN))
            with self._recording(finish_timeout_s):
                await self.record_end(outcome)

    async def _drive(self) -> Outcome:
        """Call the agent and apply what it produces as it comes; its failures end the task ``failed``.

        An async generator agent is closed when the send ends early.
        """
        try:
            with self.account.held():
                return await self._drive_handler()
        except Exception as exc:
            logger.exception("task %s (agent %s) raised", self.task.id, self.agent.name)
            return Outcome(TaskState.FAILED, Message.agent(f"{type(exc).__name__}: {exc}"))

    async def _drive_handler(self) -> Outcome:
        """``_drive`` with the task's account current (agent_server/hop.py), for the agent calls the handler makes."""
        result = self.agent.handler(self.context)
        if not hasattr(result, "__aiter__"):
            if hasattr(result, "__await__"):
                result = await result
            return await self._apply(result) or Outcome(TaskState.COMPLETED, self.closing_message)
        try:
            async for item in result:
                outcome = await self._apply(item)
                if outcome is not None:
                    return outcome
            return Outcome(TaskState.COMPLETED, self.closing_message)
        finally:
            aclose = getattr(result, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _apply(self, item: Any) -> Outcome | None:
        """Apply one thing the agent produced; an Outcome means this send is over.

        Once the send is canceled nothing more is applied, even from an agent that swallowed
        the cancellation instead of re-raising it.
        """
        if self.scope.cancel_called:
            await anyio.lowlevel.checkpoint()  # raises the cancellation, whatever the agent made of the last one
        step = interpret(item)
        if step.message is not None:
            self.closing_message = step.message
        if step.artifact is not None:
            self.fold.add(step.artifact)
            cost = step.cost_usd + self.account.unreported()  # the handler's agent calls, reported up once
            self.task.metadata["cost_usd"] = float(self.task.metadata.get("cost_usd", 0.0)) + cost
            await self.append(ArtifactEvent(seq=self.next_seq, id=self.task.id, artifact=step.artifact, cost_usd=cost))
        if step.handoff is not None:
            self.task.metadata["handoff"] = step.handoff.to_wire()
            await self.append(HandoffEvent(seq=self.next_seq, id=self.task.id, handoff=step.handoff))
            return Outcome(TaskState.COMPLETED, self.closing_message, handoff=step.handoff)
        return step.end

    def _recording(self, timeout_s: float) -> AbstractContextManager[object]:
        """Move to ``RECORDING``; where the end is recorded: shielded from every cancel, bounded by ``timeout_s``.

        A run that was not canceled records it in its own scope, from now on shielded and given
        the deadline (no cancel reaches it any more): one cancel scope fewer per send. A
        canceled scope cannot be undone: a new one then.
        """
        self._move(Phase.RECORDING)
        if self.scope.cancel_called:
            return anyio.move_on_after(timeout_s, shield=True)
        self.scope.shield = True
        self.scope.deadline = anyio.current_time() + timeout_s
        return nullcontext()

    async def record_end(self, outcome: Outcome) -> None:
        """Set the final status, publish and store the final line, then finish; never raises."""
        task_id = self.task.id
        self.task.status = TaskStatus(state=outcome.state, message=outcome.message)
        if spent := self.account.unreported():  # spent after the last line the task sent: in its total
            self.task.metadata["cost_usd"] = float(self.task.metadata.get("cost_usd", 0.0)) + spent
        published = False
        try:
            reply = reply_message(self.current().artifacts, outcome)
            if reply is not None:
                self.task.history = [*(self.task.history or []), reply]
            final = self.status_line(final=True)
            self.publish(final)
            published = True
            await self.store.save_task(self.task)
            await self.store.append_event(task_id, final)
        except Exception:
            logger.exception("could not record the end of task %s", task_id)
            if not published:
                self.publish(self.status_line(final=True))
        finally:
            self._move(Phase.FINISHED)
