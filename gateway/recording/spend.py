"""Who pays for what a run records: each event's dollars, charged as it is appended to the owner of the run.

The owner's meter travels in a context variable like the run's recorder, so an agent tool
called inside a turn charges the turn's owner without being told. The dollars are the ones
``switchboard_cost_usd_total`` counts (gateway/telemetry/metrics.py): a model call's cost, a
remote member's reported cost on its message, and an agent tool call's accumulated cost when
it ends (a member's turn is counted with its message, not with the call that carried it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from gateway.recording import events

Meter = Callable[[float], Awaitable[None]]
"""Adds dollars to what a caller has spent."""

_meter: ContextVar[Meter | None] = ContextVar("switchboard_spend_meter", default=None)


def event_cost(event: events.Event) -> float:
    """The dollars ``event`` says were spent (0.0 for most events)."""
    if type(event) is events.ModelCallEvent:
        return event.cost_usd or 0.0
    if type(event) is events.MessageEvent:
        return (event.cost_usd or 0.0) if event.remote else 0.0
    end = events.call_end(event)
    if end is not None and end.tool:
        return end.accumulated_cost_usd or 0.0
    return 0.0


@contextmanager
def charged_to(meter: Meter | None) -> Iterator[None]:
    """What the code inside the block records (and the tasks it starts) is charged to ``meter`` (None: to no one)."""
    token = _meter.set(meter)
    try:
        yield
    finally:
        _meter.reset(token)


def bill(event: events.Event) -> Awaitable[None] | None:
    """The charge of ``event``'s dollars to the current meter, to await; None (most events) when there is nothing
    to charge: a plain check, since every event a run records, each relayed chunk included, passes here."""
    meter = _meter.get()
    if meter is None:
        return None
    cost = event_cost(event)
    return meter(cost) if cost > 0 else None
