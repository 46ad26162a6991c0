"""The gateway's Prometheus metrics, read off the events of each run as the recorder appends them.

Every number here is derived from an event the run records anyway (one ``RunMetrics`` per
RunRecorder), so the metrics and the event log cannot disagree, and no step of the runner
or the call engine needs its own counting. The registry is the process's
(agent_server/telemetry/metrics.py); names, labels and meanings: docs/observability.md.

One exception: ``switchboard_agent_circuit``, each remote member's circuit (gateway/swarm/health.py),
set as the circuit moves, since it is a state of the process rather than of a run.

Handoff efficiency is the share of accepted handoffs whose target answered the turn (it
needed no further hop): ``switchboard_handoffs_resolved_total`` over
``switchboard_handoffs_total{outcome="accepted"}``; the gauge
``switchboard_handoff_efficiency`` is that ratio since the process started.
"""

from __future__ import annotations

import threading

from prometheus_client import Counter, Gauge, Histogram

from agent_server.telemetry.metrics import ENABLED, LATENCY_BUCKETS, REGISTRY
from gateway.recording import events

TOOL_OUTCOMES = ("completed", "budget_exceeded", "idle_timeout", "answer_too_large", "timeout", "cancelled", "error")
"""The ``outcome`` label of agent-tool calls; every other failure reason counts as ``error``."""
_AS_TOO_LARGE = frozenset({"answer_too_large", "line_too_long", "stream_too_large"})

RUNS = Counter(
    "switchboard_runs",
    "Runs that ended, by kind (turn, tool) and outcome (completed, failed).",
    ["kind", "outcome"],
    registry=REGISTRY,
)
RUN_DURATION = Histogram(
    "switchboard_run_duration_seconds",
    "From a run's first event to its last.",
    ["kind", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
HANDOFFS = Counter(
    "switchboard_handoffs",
    "Transfers asked for, by source, target and outcome (accepted, refused).",
    ["source", "target", "outcome"],
    registry=REGISTRY,
)
HANDOFFS_RESOLVED = Counter(
    "switchboard_handoffs_resolved",
    "Accepted transfers whose target answered the turn, by target.",
    ["target"],
    registry=REGISTRY,
)
HANDOFF_EFFICIENCY = Gauge(
    "switchboard_handoff_efficiency",
    "Resolved over accepted transfers since the process started (0 before any).",
    registry=REGISTRY,
)
HOPS = Histogram(
    "switchboard_hops_per_turn",
    "Accepted transfers in one completed turn.",
    buckets=(0, 1, 2, 3, 4, 5, 8, 13),
    registry=REGISTRY,
)
MODEL_CALLS = Counter(
    "switchboard_model_calls",
    "Model generations, by agent and model.",
    ["agent", "model"],
    registry=REGISTRY,
)
TOKENS = Counter(
    "switchboard_tokens",
    "Tokens a provider reported, by agent, model and kind (input, output).",
    ["agent", "model", "kind"],
    registry=REGISTRY,
)
COST = Counter(
    "switchboard_cost_usd",
    "Dollars spent, by agent and model (model '(remote)': a remote member's reported cost; '(agent tool)': an agent "
    "tool call's, the tool's name as agent).",
    ["agent", "model"],
    registry=REGISTRY,
)
AGENT_TOOL_CALLS = Counter(
    "switchboard_agent_tool_calls",
    "Calls to agents, by tool (or swarm member), mode and outcome.",
    ["tool", "mode", "outcome"],
    registry=REGISTRY,
)
AGENT_TOOL_DURATION = Histogram(
    "switchboard_agent_tool_duration_seconds",
    "How long calls to agents took, by tool, mode and outcome.",
    ["tool", "mode", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
EVENT_APPEND = Histogram(
    "switchboard_event_append_seconds",
    "Time to append one event to the event log, or the events appended together (durable when it returns).",
    buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
    registry=REGISTRY,
)


CIRCUIT_STATES = ("reachable", "failing", "open", "half-open")
AGENT_CIRCUIT = Gauge(
    "switchboard_agent_circuit",
    "Each remote member's circuit: 1 for the state it is in (reachable, failing, open, half-open), 0 for the others.",
    ["agent", "state"],
    registry=REGISTRY,
)


def record_circuit(agent: str, state: str) -> None:
    if ENABLED:
        for each in CIRCUIT_STATES:
            AGENT_CIRCUIT.labels(agent, each).set(1 if each == state else 0)


class _Efficiency:
    """Accepted and resolved transfers of completed turns since the process started; the gauge reads the ratio."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.accepted = 0
        self.resolved = 0

    def count(self, accepted: int, resolved: int) -> None:
        with self._lock:
            self.accepted += accepted
            self.resolved += resolved

    def ratio(self) -> float:
        with self._lock:
            return self.resolved / self.accepted if self.accepted else 0.0


_EFFICIENCY = _Efficiency()
HANDOFF_EFFICIENCY.set_function(_EFFICIENCY.ratio)


def tool_outcome(reason: str | None) -> str:
    """The bounded ``outcome`` label of an agent-tool call that ended with ``reason``."""
    if reason in _AS_TOO_LARGE:
        return "answer_too_large"
    return reason if reason in TOOL_OUTCOMES else "error"


def record_append(seconds: float) -> None:
    if ENABLED:
        EVENT_APPEND.observe(seconds)


class RunMetrics:
    """What one run's events add to the metrics; fed every event of the run, in order."""

    def __init__(self) -> None:
        self._kind: str | None = None
        self._started_ms = 0
        self._tool_call: str | None = None
        self._calls: dict[str, tuple[str, str]] = {}

    def observe(self, event: events.Event) -> None:
        if not ENABLED:
            return
        if type(event) in _OBSERVED:
            self._count(event)
        if self._kind is None:
            self._begun(event)

    def _begun(self, event: events.Event) -> None:
        """The run's first event here: a turn's or a tool call's start, or ``run_resumed`` in a run taken over."""
        if type(event) is events.RunResumedEvent:  # a turn names the agent that goes on, a tool call does not
            self._kind, self._tool_call = ("turn", None) if event.agent is not None else ("tool", event.call_id)
        else:
            self._kind = "turn" if type(event) is events.RunStartedEvent else "tool"
            self._tool_call = event.call_id if type(event) is events.AgentToolInvokedEvent else None
        self._started_ms = event.timestamp_ms

    def _count(self, event: events.Event) -> None:
        if type(event) is events.RunCompletedEvent:
            self._run_completed(event)
        elif type(event) is events.RunFailedEvent:
            self._ended(event, "failed")
        elif type(event) is events.SwarmHandoffEvent:
            HANDOFFS.labels(event.source, event.target, "accepted").inc()
        elif type(event) is events.HandoffRefusedEvent:
            HANDOFFS.labels(event.source, event.target, "refused").inc()
        elif type(event) is events.ModelCallEvent:
            _model_call(event)
        elif type(event) is events.MessageEvent and event.remote and event.cost_usd:
            COST.labels(event.agent, "(remote)").inc(event.cost_usd)
        elif type(event) is events.AgentToolInvokedEvent:
            self._calls[str(event.call_id)] = (event.tool or event.member or "", str(event.mode))
        elif (end := events.call_end(event)) is not None:
            self._call_ended(end)

    def _ended(self, event: events.Event, outcome: str) -> None:
        kind = self._kind or "turn"
        RUNS.labels(kind, outcome).inc()
        RUN_DURATION.labels(kind, outcome).observe(max(0, event.timestamp_ms - self._started_ms) / 1000)

    def _run_completed(self, event: events.RunCompletedEvent) -> None:
        HOPS.observe(event.handoffs)
        if event.handoffs:
            HANDOFFS_RESOLVED.labels(event.agent).inc()
            _EFFICIENCY.count(event.handoffs, 1)
        self._ended(event, "completed")

    def _call_ended(self, event: events.CallEnd) -> None:
        outcome = tool_outcome(event.outcome)
        tool, mode = self._calls.pop(event.call_id, ("", ""))
        AGENT_TOOL_CALLS.labels(tool, mode, outcome).inc()
        AGENT_TOOL_DURATION.labels(tool, mode, outcome).observe((event.duration_ms or 0.0) / 1000)
        if event.tool and event.accumulated_cost_usd:  # a member's turn is counted with its message, not here
            COST.labels(event.tool, "(agent tool)").inc(event.accumulated_cost_usd)
        if self._kind == "tool" and event.call_id == self._tool_call:
            self._ended(event, "completed" if outcome == "completed" else "failed")


def _model_call(event: events.ModelCallEvent) -> None:
    MODEL_CALLS.labels(event.agent, event.model).inc()
    TOKENS.labels(event.agent, event.model, "input").inc(event.prompt_tokens or 0)
    TOKENS.labels(event.agent, event.model, "output").inc(event.completion_tokens or 0)
    COST.labels(event.agent, event.model).inc(event.cost_usd or 0.0)


_OBSERVED = frozenset(
    {
        events.RunCompletedEvent,
        events.RunFailedEvent,
        events.SwarmHandoffEvent,
        events.HandoffRefusedEvent,
        events.ModelCallEvent,
        events.MessageEvent,
        events.AgentToolInvokedEvent,
    }
    | events.CALL_END_MODELS
)
"""The models whose events count (``_count``); the others, a relay's progress events first, only pass by."""


TOKEN_REFUSALS = Counter(
    "switchboard_token_refusals",
    "Requests refused by a token's limit, by token and limit (rate, spend).",
    ["token", "limit"],
    registry=REGISTRY,
)
TOKEN_SPEND = Gauge(
    "switchboard_token_spend_usd",
    "Dollars a token with a spend cap has spent in its current window, as this process last read or added it.",
    ["token"],
    registry=REGISTRY,
)


def record_token_refusal(token: str, limit: str) -> None:
    if ENABLED:
        TOKEN_REFUSALS.labels(token, limit).inc()


def record_token_spend(token: str, spent: float) -> None:
    if ENABLED:
        TOKEN_SPEND.labels(token).set(spent)
