"""What a turn whose process stopped mid-run leaves to the process that takes it over, read from its events.

A turn's session was saved at its start with the user's message and the mark of the
turn (``open_run``), and every step since is in the run's events. The process that takes
the run over (gateway/service/takeover.py) reads them once: when the step in flight was a
remote member's task (its ``agent_tool_invoked`` has no ending event), that task is
followed again by its id after the last stream line the log holds (calls/reattach.py),
never sent a second time, and the turn goes on from its answer; any other step (a local
agent's model call, with the tools it was running) is redone from the session as the
turn started. The turn keeps its run id, so its followers read one run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.calls.reattach import Reattach, Unresumable, in_flight
from gateway.recording.events import Event, RunStartedEvent

REATTACHED = "reattached"
"""``run_resumed``'s ``step`` when the call in flight is followed again."""
REDONE = "redone"
"""``run_resumed``'s ``step`` when the step in flight is done again."""


@dataclass(frozen=True)
class TurnTakeover:
    """A turn to carry on: its run's events so far, the session they began in, the call they left in flight."""

    events: tuple[Event, ...]
    session_id: str
    call: Reattach | Unresumable | None

    @property
    def run_id(self) -> str:
        return self.events[-1].run_id

    @property
    def after_seq(self) -> int:
        return self.events[-1].seq

    @property
    def reattach(self) -> Reattach | None:
        """The remote member's call to follow again; None: the step in flight (a local one) is redone."""
        call = self.call
        return call if isinstance(call, Reattach) and call.member is not None else None

    @property
    def refused(self) -> str | None:
        """Why the turn cannot go on (a remote call whose task the log never learnt): the run fails saying so."""
        return self.call.reason if isinstance(self.call, Unresumable) else None


def turn_takeover(events: Sequence[Event]) -> TurnTakeover | None:
    """The takeover of a turn's run from its events; None when the run is no swarm turn (a tool call's run)."""
    started = events[0] if events else None
    if not isinstance(started, RunStartedEvent) or started.session_id is None:
        return None
    return TurnTakeover(tuple(events), started.session_id, in_flight(events))
