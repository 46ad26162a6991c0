"""A run's summary for ``GET /runs/{id}``, read from its events: who spoke, hops, tools, tokens, cost, time.

Everything is derived from the event log, so a summary of a finished run is the same in
any process that reads the log, and one of a run in progress is what has happened so far.
"""

from __future__ import annotations

from typing import Any

from gateway import defaults
from gateway.recording.events import (
    AgentToolInvokedEvent,
    Event,
    MessageEvent,
    ModelCallEvent,
    RunCompletedEvent,
    RunFailedEvent,
    RunStartedEvent,
    SwarmHandoffEvent,
    ToolCallEvent,
    call_end,
)
from gateway.recording.usage import RunUsage


def summarize(run_id: str, events: list[Event], *, closed: bool) -> dict[str, Any]:
    """The summary of one run (``closed``: the event log says it ended)."""
    usage = RunUsage()
    agents: list[str] = []
    handoffs: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    state = "running"
    session_id = trace_id = None
    for event in events:
        usage.add(event)
        if type(event) is RunStartedEvent:
            _visit(agents, event.agent)
            session_id, trace_id = event.session_id, event.trace_id
        elif type(event) is MessageEvent or type(event) is ModelCallEvent:
            _visit(agents, event.agent)
        elif type(event) is SwarmHandoffEvent:
            _visit(agents, event.target)
            handoffs.append({"source": event.source, "target": event.target, "reason": event.reason, "hop": event.hop})
        elif type(event) is ToolCallEvent and not event.remote:
            tools.append({"tool": event.tool, "call_id": event.call_id, "agent": event.agent})
        elif type(event) is AgentToolInvokedEvent:
            trace_id = trace_id or event.trace_id
            calls[str(event.call_id)] = {
                "tool": event.tool,
                "member": event.member,
                "agent": event.agent,
                "mode": event.mode,
                "outcome": None,
            }
        elif (end := call_end(event)) is not None:
            call = calls.setdefault(end.call_id, {"tool": end.tool})
            call["outcome"] = end.outcome
            call["cost_usd"] = end.accumulated_cost_usd
            call["duration_ms"] = end.duration_ms
        elif type(event) is RunCompletedEvent:
            state = "completed"
        elif type(event) is RunFailedEvent:
            state = "failed"
    agent_calls = list(calls.values())
    if state == "running" and closed:
        ends = [c["outcome"] for c in agent_calls]
        state = "completed" if ends and all(o == "completed" for o in ends) else "failed" if ends else "closed"
    by_agent = usage.by_agent()
    tool_cost = sum(float(c.get("cost_usd") or 0.0) for c in agent_calls if c.get("tool"))
    started = events[0].timestamp_ms if events else None
    ended = events[-1].timestamp_ms if events and state != "running" else None
    return {
        "run_id": run_id,
        "state": state,
        "session_id": session_id,
        "trace_id": trace_id,
        "agents": agents,
        "hops": len(handoffs),
        "handoffs": handoffs,
        "tool_calls": tools,
        "agent_calls": agent_calls,
        "usage_by_agent": by_agent,
        "prompt_tokens": sum(int(u["prompt_tokens"]) for u in by_agent.values()),
        "completion_tokens": sum(int(u["completion_tokens"]) for u in by_agent.values()),
        "cost_usd": round(sum(u["cost_usd"] for u in by_agent.values()) + tool_cost, 10),
        "started_ms": started,
        "ended_ms": ended,
        "duration_ms": ended - started if started is not None and ended is not None else None,
        "events": len(events),
        "truncated": len(events) >= defaults.MAX_SUMMARY_EVENTS,
    }


def _visit(agents: list[str], name: str | None) -> None:
    if name and name not in agents:
        agents.append(name)
