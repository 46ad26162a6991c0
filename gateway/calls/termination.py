"""The gateway's decision to end a call, and where the cancel it sends stands.

A call the gateway ends (its budget, its deadlines, a line or stream over its limit, the
caller cancelled) is recorded as ``agent_tool_terminated`` rather than as an error, with
whether a best-effort ``tasks/cancel`` was sent and acknowledged. The decision is raised
as ``Terminated`` from wherever it is taken (reading a line, waiting for a reply) up to
the call's lifecycle, which sends the cancel once and records the ending.
"""

from __future__ import annotations

import enum
from typing import Any

from gateway.errors import AgentToolError
from protocol import SwitchboardError


class Cancel(enum.Enum):
    """The ``tasks/cancel`` of a terminated call: to be sent, or what became of it (sent once at most)."""

    PENDING = "pending"
    """Wanted, not sent yet."""
    NOT_SENT = "not_sent"
    """Not wanted (the task had ended already), or nothing to send it to (no peer or no task id yet)."""
    SENT = "sent"
    """Sent; the peer did not acknowledge it within the cancel deadline."""
    ACKNOWLEDGED = "acknowledged"
    """Sent, and the peer answered that the task is canceled."""

    @property
    def sent(self) -> bool:
        return self in (Cancel.SENT, Cancel.ACKNOWLEDGED)


class Terminated(SwitchboardError):
    """The gateway decided to end the call: the public error, the ending event's own fields, and the cancel.

    It never leaves the call: the call records the ending and raises ``error`` in its place.
    """

    def __init__(self, error: AgentToolError, *, cancel: bool = True, **fields: Any) -> None:
        super().__init__(error.message)
        self.error = error
        self.fields = fields
        self.cancel = Cancel.PENDING if cancel else Cancel.NOT_SENT
