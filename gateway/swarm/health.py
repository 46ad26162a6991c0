"""Whether a remote member answers: a circuit per registered agent, so one dead agent strands no session.

Each ``RemoteAgent`` keeps an ``AgentHealth``. A call that could not reach the agent (no
connection, a connect or headers timeout, a 502/503/504 from whatever fronts it) counts as a
failure; ``FAILURES_TO_OPEN`` in a row open the circuit: the agent is not called for
``OPEN_S`` (doubling, up to ``MAX_OPEN_S``, while probes keep failing), and a turn it holds goes
to the swarm's fallback at once instead of waiting on a connect timeout. Then one call is let
through as a probe (half-open): its success closes the circuit, its failure opens it again.
Any answer from the agent, even a failed task, is a success here: the agent is reachable.

The state is this process's (each replica learns it from its own calls); ``GET /agents``
shows it, ``switchboard_agent_circuit`` exports it.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

from gateway.errors import AgentToolError, AgentToolTimeout, PeerConnectionError, PeerHTTPError
from gateway.telemetry.metrics import record_circuit

FAILURES_TO_OPEN = 3
OPEN_S = 5.0
MAX_OPEN_S = 60.0
_UNREACHABLE_TIMEOUTS = frozenset({"connect_timeout", "headers_timeout"})
_UNREACHABLE_STATUSES = frozenset({502, 503, 504})


class Circuit(enum.Enum):
    CLOSED = "reachable"
    FAILING = "failing"
    """Failed lately, fewer than ``FAILURES_TO_OPEN`` times in a row: still called."""
    OPEN = "open"
    HALF_OPEN = "half-open"
    """One probe call is under way; the others are refused until it ends."""


def unreachable(exc: BaseException) -> bool:
    """Whether a call's failure says the agent could not be reached (not that it answered badly)."""
    if isinstance(exc, PeerConnectionError):
        return True
    if isinstance(exc, AgentToolTimeout):
        return exc.reason in _UNREACHABLE_TIMEOUTS
    return isinstance(exc, PeerHTTPError) and exc.status in _UNREACHABLE_STATUSES


class CircuitOpen(PeerConnectionError):
    """The agent is not called: its circuit is open (it failed ``FAILURES_TO_OPEN`` times in a row)."""


@dataclass
class AgentHealth:
    name: str
    circuit: Circuit = Circuit.CLOSED
    failures: int = 0
    last_error: str | None = None
    open_s: float = OPEN_S
    reopens_at: float = field(default=0.0, repr=False)

    def admit(self) -> None:
        """Raise CircuitOpen unless a call may go out now (a closed circuit, or the half-open probe)."""
        if self.circuit is Circuit.OPEN and time.monotonic() >= self.reopens_at:
            self._move(Circuit.HALF_OPEN)
            return
        if self.circuit in (Circuit.OPEN, Circuit.HALF_OPEN):
            wait = max(0.0, self.reopens_at - time.monotonic())
            raise CircuitOpen(
                f"{self.name} is not called: it could not be reached {self.failures} times in a row "
                f"(last: {self.last_error}); the next try is in {wait:.0f} s",
                reason="circuit_open",
            )

    def succeeded(self) -> None:
        self.failures = 0
        self.open_s = OPEN_S
        self._move(Circuit.CLOSED)

    def failed(self, error: AgentToolError) -> None:
        self.failures += 1
        self.last_error = error.message
        if self.circuit is Circuit.HALF_OPEN:
            self.open_s = min(self.open_s * 2, MAX_OPEN_S)
        if self.circuit is Circuit.HALF_OPEN or self.failures >= FAILURES_TO_OPEN:
            self.reopens_at = time.monotonic() + self.open_s
            self._move(Circuit.OPEN)
        else:
            self._move(Circuit.FAILING)

    def abandoned(self) -> None:
        """A call ended without an answer either way (cancelled): a probe it was leaves the next call to probe."""
        if self.circuit is Circuit.HALF_OPEN:
            self.reopens_at = time.monotonic()
            self._move(Circuit.OPEN)

    def retry_in_s(self) -> float | None:
        if self.circuit is not Circuit.OPEN:
            return None
        return round(max(0.0, self.reopens_at - time.monotonic()), 3)

    def to_dict(self) -> dict[str, object]:
        return {
            "state": self.circuit.value,
            "failures": self.failures,
            "last_error": self.last_error,
            "retry_in_s": self.retry_in_s(),
        }

    def _move(self, circuit: Circuit) -> None:
        if circuit is not self.circuit:
            self.circuit = circuit
            record_circuit(self.name, circuit.value)
