"""How the CLI shows agent-tool calls as they happen: text as it streams, a progress line, costs rounded.

``switchboard call`` uses ``ProgressRenderer`` on a terminal (``NDJSONRenderer`` when piped);
``switchboard chat`` shows each tool call of a turn with ``CallLine``. Both read events as
the event log writes them, so any command that follows a run can show them the same way.
Costs are rounded for display (``usd``); the events keep full precision.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, TextIO

import orjson

from gateway.calls.result import AgentToolResult
from gateway.errors import AgentToolError
from gateway.recording.events import AgentToolProgressEvent, Event, EventType, call_end

_CLEAR_LINE = "\r\x1b[2K"
_SPINNER = "|/-\\"
_ENDINGS = frozenset(
    {EventType.AGENT_TOOL_COMPLETED.value, EventType.AGENT_TOOL_TERMINATED.value, EventType.AGENT_TOOL_ERROR.value}
)


def usd(value: float | None) -> str:
    """``$0.0045`` (four decimals: budgets are often fractions of a cent); ``$?`` when unknown."""
    return "$?" if value is None else f"${value:.4f}"


class CallLine:
    """One agent-tool call as a person reads it: tool, chunks, cost against its budget, and how it ended.

    ``update`` takes the call's events in their wire form (``Event.to_dict()``, or a line of NDJSON).
    """

    def __init__(self, invoked: Mapping[str, Any]) -> None:
        self.name = str(invoked.get("tool") or invoked.get("member") or invoked.get("agent") or "call")
        self.budget: float | None = invoked.get("max_cost_usd")
        self.chunks = 0
        self.cost_usd = 0.0
        self.ending: str | None = None
        self.cancel_acknowledged: bool | None = None

    def update(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        cost = event.get("accumulated_cost_usd")
        if isinstance(cost, int | float):
            self.cost_usd = float(cost)
        if kind == EventType.AGENT_TOOL_PROGRESS.value:
            self.chunks = int(event.get("chunk_index", self.chunks)) + 1
        elif kind in _ENDINGS:
            self.ending = "completed" if kind == EventType.AGENT_TOOL_COMPLETED.value else str(event.get("reason"))
            self.cancel_acknowledged = event.get("cancel_acknowledged")

    def line(self) -> str:
        """``research: 3 chunks · $0.0030 of $0.0025 budget · budget_exceeded, cancel acknowledged``."""
        parts = [f"{self.name}: {self.chunks} chunk{'s' if self.chunks != 1 else ''}"]
        parts.append(usd(self.cost_usd) + (f" of {usd(self.budget)} budget" if self.budget is not None else ""))
        if self.ending is not None:
            cancel = {True: ", cancel acknowledged", False: ", cancel not acknowledged", None: ""}
            parts.append(self.ending + cancel[self.cancel_acknowledged])
        return " · ".join(parts)


class NDJSONRenderer:
    """One event per line, flushed at once, for pipes and scripts."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def event(self, event: Event) -> None:
        self.out.write(orjson.dumps(event.to_dict()).decode() + "\n")
        self.out.flush()

    def finish(self, result: AgentToolResult | None, error: AgentToolError | None) -> None:
        """The events already said everything."""


class ProgressRenderer:
    """Text as it streams in, a status line rewritten in place until the first text comes, then a summary line.

    The status line (chunks, cost, elapsed time) only changes on events, so a quiet agent
    leaves it as it was; once text flows, the cursor is in the text and the line is not drawn again.
    """

    def __init__(self, out: TextIO, uri: str, mode: str) -> None:
        self.out = out
        self.uri = uri
        self.mode = mode
        self.chunks = 0
        self.turns = 0
        self.cost_usd = 0.0
        self._started = time.monotonic()
        self._drawn = False
        self._streamed = ""

    def event(self, event: Event) -> None:
        if type(event) is AgentToolProgressEvent:
            self.chunks = event.chunk_index + 1
            self.cost_usd = event.accumulated_cost_usd or self.cost_usd
            if event.kind == "turn":
                self.turns = event.turn or self.turns
            if event.kind == "artifact" and event.text:
                self._write_text(event.text)
                return
        elif (end := call_end(event)) is not None:
            self.cost_usd = end.accumulated_cost_usd or self.cost_usd
            return
        if not self._streamed:
            self._draw()

    def line(self) -> str:
        """The progress line as it reads now."""
        parts = [f"{_SPINNER[self.chunks % len(_SPINNER)]} {self.mode} {self.uri}"]
        if self.mode == "conversational":
            parts.append(f"{self.turns} turn{'s' if self.turns != 1 else ''}")
        parts.append(f"{self.chunks} chunk{'s' if self.chunks != 1 else ''}")
        parts.append(usd(self.cost_usd))
        parts.append(f"{time.monotonic() - self._started:.1f} s")
        return " · ".join(parts)

    def finish(self, result: AgentToolResult | None, error: AgentToolError | None) -> None:
        """Replace the progress line with the answer (or what was received before the failure)."""
        if self._drawn:
            self.out.write(_CLEAR_LINE)
        received = result if result is not None else (error.partial if error is not None else None)
        text = received.text if received is not None else ""
        if text.startswith(self._streamed):
            text = text[len(self._streamed) :]  # what streamed in is on the screen already
        shown = self._streamed + text
        if text:
            self.out.write(text)
        if shown and not shown.endswith("\n"):
            self.out.write("\n")
        if received is not None:
            state = error.reason if error is not None else (received.state or "done")
            elapsed = time.monotonic() - self._started
            self.out.write(f"[{state} · {received.chunks} chunks · {usd(received.cost_usd)} · {elapsed:.1f} s]\n")
        self.out.flush()

    def _write_text(self, text: str) -> None:
        if self._drawn:
            self.out.write(_CLEAR_LINE)
            self._drawn = False
        self.out.write(text)
        self.out.flush()
        self._streamed += text

    def _draw(self) -> None:
        self.out.write(_CLEAR_LINE + self.line())
        self.out.flush()
        self._drawn = True
