"""A run's summary for ``GET /runs/{id}``, read from its events: who spoke, hops, tools, tokens, cost, time.

Everything is derived from the event log, so a summary of a finished run is the same in
any process that reads the log, and one of a run in progress is what has happened so far.
"""

from __future__ import annotations

from typing import Any

from gateway import defaults
from gateway.recording.events import Event, EventType
from gateway.recording.usage import RunUsage

_CALL_ENDS = frozenset(
    {EventType.AGENT_TOOL_COMPLETED.value, EventType.AGENT_TOOL_TERMINATED.value, EventType.AGENT_TOOL_ERROR.value}
)


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
        fields = event.fields
        kind = event.type
        if kind in (EventType.RUN_STARTED.value, EventType.MESSAGE.value, EventType.MODEL_CALL.value):
            _visit(agents, fields.get("agent"))
        if kind == EventType.RUN_STARTED.value:
            session_id, trace_id = fields.get("session_id"), fields.get("trace_id")
        elif kind == EventType.HANDOFF.value:
            _visit(agents, fields.get("target"))
            handoffs.append({key: fields.get(key) for key in ("source", "target", "reason", "hop")})
        elif kind == EventType.TOOL_CALL.value and not fields.get("remote"):
            tools.append({"tool": fields.get("tool"), "call_id": fields.get("call_id"), "agent": fields.get("agent")})
        elif kind == EventType.AGENT_TOOL_INVOKED.value:
            trace_id = trace_id or fields.get("trace_id")
            calls[str(fields.get("call_id"))] = {
                "tool": fields.get("tool"),
                "member": fields.get("member"),
                "agent": fields.get("agent"),
                "mode": fields.get("mode"),
                "outcome": None,
            }
        elif kind in _CALL_ENDS:
            call = calls.setdefault(str(fields.get("call_id")), {"tool": fields.get("tool")})
            call["outcome"] = "completed" if kind == EventType.AGENT_TOOL_COMPLETED.value else fields.get("reason")
            call["cost_usd"] = fields.get("accumulated_cost_usd")
            call["duration_ms"] = fields.get("duration_ms")
        elif kind == EventType.RUN_COMPLETED.value:
            state = "completed"
        elif kind == EventType.RUN_FAILED.value:
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


def _visit(agents: list[str], name: Any) -> None:
    if name and name not in agents:
        agents.append(str(name))
