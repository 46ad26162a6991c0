"""Runs that outlive their process: a run whose gateway died is carried on by another one, not failed.

Who finds such a run: a single gateway restarting on its SQLite files, at its start (every
run it left open); a replica on Redis, in its event log's watch over the replicas' marks of
life, about a lease after the death (the run claimed in one script, so exactly one replica
takes it). The run goes on in this service's task group, under its own run id:

- a swarm turn (swarm/resume.py): ``run_resumed``, then the remote call that was in flight
  followed again by its task id after the last line the log holds, or the step that was
  in flight (a local model's) redone from the session as the turn started; then the turn
  ends as it would have (``run_completed``, the session saved, its mark cleared);
- an agent tool call (``POST /tools/{name}/call``): ``run_resumed``, then the call followed
  again the same way, and the run closed.

A run that cannot go on (its remote task is gone, its tool was removed, the log never
learnt its task) ends ``run_failed`` saying why; one that is neither ends ``run_failed`` as
interrupted, as it did before takeovers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import anyio

from gateway.calls.coordinator import Gateway
from gateway.calls.reattach import Reattach, in_flight
from gateway.event_log import EventLog
from gateway.event_log.base import INTERRUPTED
from gateway.recording.events import Event, EventType
from gateway.recording.recorder import RunRecorder
from gateway.service.members import Members
from gateway.service.runs import ServiceRuns
from gateway.swarm.resume import REATTACHED, TurnTakeover, turn_takeover
from protocol.errors import SwitchboardError

logger = logging.getLogger("gateway.service")


@dataclass(frozen=True)
class Takeover:
    """Carries on, in the service's task group, the runs of dead processes that the event log hands it."""

    _runs: ServiceRuns
    _members: Members
    _gateway: Gateway
    _log: EventLog

    async def adopt(self, run_id: str) -> bool:
        """Carry on ``run_id`` (claimed for this process) in the service's task group; False when runs cannot
        start here now. A run that is nothing this can carry on is closed at once, as interrupted."""
        if not self._runs.running:
            return False
        if run_id in self._runs.active:  # carried on here already
            return True
        try:
            events = await self._log.read(run_id)
        except Exception as exc:  # the log closes it as interrupted, or tries again at its next look
            logger.warning("run %s could not be read to take it over: %s", run_id, exc)
            return False
        plan = _plan(events)
        if plan is None:
            await self._fail(RunRecorder(self._log, run_id), INTERRUPTED, "Interrupted")
            return True
        self._runs.active.add(run_id)
        self._runs.task_group().start_soon(self._resume, run_id, plan, events[-1].seq, name=f"takeover of {run_id}")
        return True

    async def adopt_abandoned(self) -> None:
        """At start: every run a stopped process left open, claimed and carried on (or closed, if it cannot be)."""
        for run_id in await self._log.abandoned_runs():
            if await self._log.claim_run(run_id) and not await self.adopt(run_id):
                await self._fail(RunRecorder(self._log, run_id), INTERRUPTED, "Interrupted")

    async def _resume(self, run_id: str, plan: TurnTakeover | Reattach, after_seq: int) -> None:
        """The run carried on to its end; one that ends without being closed (its session no longer waits for it,
        the session stayed busy) is closed as interrupted: a run this process claimed is left open to nobody."""
        with self._runs.cancellable(run_id):  # named: a cancel, asked on any replica, finds it here
            try:
                if isinstance(plan, Reattach):
                    await self._tool_call(run_id, after_seq, plan)
                else:
                    async for _ in self._members.runner.resume(plan, self._log.process_id):
                        pass
            except SwitchboardError as exc:  # recorded as the run's failure where it happened
                logger.info("run %s, taken over, failed: %s", run_id, exc)
            except Exception:
                logger.warning("run %s, taken over, failed", run_id, exc_info=True)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._close_if_open(run_id)
                self._runs.active.discard(run_id)

    async def _close_if_open(self, run_id: str) -> None:
        try:
            if not await self._log.is_closed(run_id):
                await self._fail(RunRecorder(self._log, run_id), INTERRUPTED, "Interrupted")
        except Exception as exc:  # the store's own failure: a Redis log closes the run once it answers again
            logger.warning("run %s, taken over, could not be closed: %s", run_id, exc)

    async def _tool_call(self, run_id: str, after_seq: int, call: Reattach) -> None:
        """An agent tool call's run: ``run_resumed``, the call followed again, the run closed however it ends."""
        recorder = RunRecorder(self._log, run_id)
        try:
            await recorder.emit(
                EventType.RUN_RESUMED,
                by=self._log.process_id,
                after_seq=after_seq,
                step=REATTACHED,
                task_id=call.task_id,
                call_id=call.call_id,
            )
            assert call.tool is not None
            if call.tool not in self._gateway.tools:
                gone = f"interrupted: the agent tool {call.tool!r} was removed, so its call cannot be followed again"
                await recorder.emit(EventType.RUN_FAILED, error=gone, error_type="NotResumable")
                return
            await self._gateway.follow_call(call.tool, call, run_id)
        finally:
            await self._log.close_run(run_id)

    async def _fail(self, recorder: RunRecorder, error: str, error_type: str) -> None:
        await recorder.emit(EventType.RUN_FAILED, error=error, error_type=error_type)
        await self._log.close_run(recorder.run_id)


def _plan(events: list[Event]) -> TurnTakeover | Reattach | None:
    """How the run goes on: a swarm turn, an agent tool call followed again, or not at all (None)."""
    if not events:
        return None
    turn = turn_takeover(events)
    if turn is not None:
        return turn
    call = in_flight(events)
    return call if isinstance(call, Reattach) and call.tool is not None else None
