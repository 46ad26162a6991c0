"""How ``switchboard events`` shows a run on a terminal: who speaks, handoff arrows, tool progress with cost.

``RunView`` turns each event (its wire form) into lines a person reads; an agent-tool
call's progress is one line rewritten in place (``CallLine``) until the call ends. Piped,
the command prints NDJSON instead. Costs are rounded for display; the events keep them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

from gateway.cli.progress import CallLine, usd
from gateway.recording.events import EventType

_CLEAR_LINE = "\r\x1b[2K"
_TRANSFER_PREFIX = "transfer_to_"
_ENDINGS = frozenset(
    {EventType.AGENT_TOOL_COMPLETED.value, EventType.AGENT_TOOL_TERMINATED.value, EventType.AGENT_TOOL_ERROR.value}
)

Wire = Mapping[str, Any]


class RunView:
    """Renders events to ``out``; ``label`` each line with its run's session (following many runs at once)."""

    def __init__(self, out: TextIO, *, label: bool = False) -> None:
        self.out = out
        self.label = label
        self._calls: dict[str, CallLine] = {}
        self._sessions: dict[str, str] = {}
        self._tool_cost: dict[str, float] = {}
        self._progress = False
        self._streamed: dict[tuple[str, str], list[str]] = {}
        """Per run and agent, the text deltas since its last message: a message whose event says
        ``content_in_deltas`` is shown with them."""

    def show(self, event: Wire) -> None:
        kind = str(event.get("type"))
        if kind == EventType.RUN_STARTED.value:
            self._sessions[str(event.get("run_id"))] = str(event.get("session_id"))
        run_id = str(event.get("run_id"))
        prefix = f"[{self._sessions.get(run_id, run_id)}] " if self.label else ""
        if kind == EventType.AGENT_TOOL_PROGRESS.value:
            call = self._calls.get(str(event.get("call_id")))
            if call is not None:
                call.update(event)
                self._write(f"{prefix}  ⋯ {call.line()}", rewrite=True)
            return
        text = self.text(event)
        if text is not None:
            self._write(prefix + text)

    def text(self, event: Wire) -> str | None:
        """The lines one event shows (None: nothing of its own, e.g. a text delta the message repeats)."""
        kind = str(event.get("type"))
        agent = event.get("agent")
        if kind == EventType.RUN_STARTED.value:
            return f"▶ {event.get('run_id')} · session {event.get('session_id')} · you: {event.get('user_message')}"
        if kind == EventType.TEXT_DELTA.value:
            self._streamed.setdefault((str(event.get("run_id")), str(agent)), []).append(str(event.get("text") or ""))
            return None
        if kind == EventType.MESSAGE.value:
            streamed = "".join(self._streamed.pop((str(event.get("run_id")), str(agent)), []))
            content = (streamed if event.get("content_in_deltas") else str(event.get("content") or "")).strip()
            return f"{agent}: {content}" if content else None
        if kind == EventType.MODEL_CALL.value:
            tokens = f"{event.get('prompt_tokens', '?')} in / {event.get('completion_tokens', '?')} out tokens"
            return f"  · {agent} ({event.get('model')}): {tokens}, {usd(event.get('cost_usd'))}"
        if kind == EventType.TOOL_CALL.value and not str(event.get("tool", "")).startswith(_TRANSFER_PREFIX):
            return f"  ⚙ {agent} calls {event.get('tool')}"
        if kind == EventType.HANDOFF.value:
            reason = f": {event['reason']}" if event.get("reason") else ""
            return f"  {event.get('source')} → {event.get('target')} (hop {event.get('hop')}){reason}"
        if kind == EventType.HANDOFF_REFUSED.value:
            return f"  {event.get('source')} ↛ {event.get('target')}: refused ({event.get('cause')})"
        if kind == EventType.LIMIT_REACHED.value:
            return f"  ! {agent} reached {event.get('limit')} = {event.get('value')}"
        if kind == EventType.AGENT_TOOL_INVOKED.value:
            call = self._calls[str(event.get("call_id"))] = CallLine(event)
            budget = f", budget {usd(call.budget)}" if call.budget is not None else ""
            return f"  ⇢ {call.name}: {event.get('mode')} call to {event.get('agent')}{budget}"
        if kind in _ENDINGS:
            call = self._calls.pop(str(event.get("call_id")), CallLine(event))
            call.update(event)
            if event.get("tool"):
                run_id = str(event.get("run_id"))
                self._tool_cost[run_id] = self._tool_cost.get(run_id, 0.0) + call.cost_usd
            return f"  ⇠ {call.line()}"
        if kind == EventType.RUN_COMPLETED.value:
            return "■ " + _totals(event, self._tool_cost.pop(str(event.get("run_id")), 0.0))
        if kind == EventType.RUN_FAILED.value:
            return f"✗ the run failed: {event.get('error')}"
        return None

    def _write(self, text: str, *, rewrite: bool = False) -> None:
        if self._progress:
            self.out.write(_CLEAR_LINE)
        self.out.write(text if rewrite else text + "\n")
        self._progress = rewrite
        self.out.flush()


def _totals(event: Wire, tool_cost: float) -> str:
    """Who answered, hops, the agents' tokens, and the cost of the agents and of the agent tools they called."""
    usage: Mapping[str, Mapping[str, float]] = event.get("usage_by_agent") or {}
    prompt = sum(int(u.get("prompt_tokens", 0)) for u in usage.values())
    completion = sum(int(u.get("completion_tokens", 0)) for u in usage.values())
    cost = sum(float(u.get("cost_usd", 0.0)) for u in usage.values()) + tool_cost
    hops = event.get("handoffs") or 0
    return (
        f"done: {event.get('agent')} answered · {hops} hop{'s' if hops != 1 else ''} · "
        f"{prompt} in / {completion} out tokens · {usd(cost)}"
    )
