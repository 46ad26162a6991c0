"""How ``switchboard call`` shows a call as it happens: a live progress line on a terminal, NDJSON otherwise."""

from __future__ import annotations

import time
from typing import TextIO

import orjson

from gateway.agent_result import AgentToolResult
from gateway.errors import AgentToolError
from gateway.events import Event, EventType

_CLEAR_LINE = "\r\x1b[2K"
_SPINNER = "|/-\\"
_ENDINGS = frozenset(
    {EventType.AGENT_TOOL_COMPLETED.value, EventType.AGENT_TOOL_TERMINATED.value, EventType.AGENT_TOOL_ERROR.value}
)


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
    """A status line rewritten in place (chunks, cost, elapsed time), then the answer.

    The line only changes on events, so a quiet agent leaves it as it was.
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

    def event(self, event: Event) -> None:
        fields = event.fields
        if event.type == EventType.AGENT_TOOL_PROGRESS.value:
            self.chunks = int(fields.get("chunk_index", self.chunks)) + 1
            self.cost_usd = float(fields.get("accumulated_cost_usd") or self.cost_usd)
            if fields.get("kind") == "turn":
                self.turns = int(fields.get("turn") or self.turns)
        elif event.type in _ENDINGS:
            self.cost_usd = float(fields.get("accumulated_cost_usd") or self.cost_usd)
            return
        self._draw()

    def line(self) -> str:
        """The progress line as it reads now."""
        parts = [f"{_SPINNER[self.chunks % len(_SPINNER)]} {self.mode} {self.uri}"]
        if self.mode == "conversational":
            parts.append(f"{self.turns} turn{'s' if self.turns != 1 else ''}")
        parts.append(f"{self.chunks} chunk{'s' if self.chunks != 1 else ''}")
        parts.append(f"${self.cost_usd:.4f}")
        parts.append(f"{time.monotonic() - self._started:.1f} s")
        return " · ".join(parts)

    def finish(self, result: AgentToolResult | None, error: AgentToolError | None) -> None:
        """Replace the progress line with the answer (or what was received before the failure)."""
        if self._drawn:
            self.out.write(_CLEAR_LINE)
        received = result if result is not None else (error.partial if error is not None else None)
        text = received.text if received is not None else ""
        if text:
            self.out.write(text if text.endswith("\n") else text + "\n")
        if received is not None:
            state = error.reason if error is not None else (received.state or "done")
            elapsed = time.monotonic() - self._started
            self.out.write(f"[{state} · {received.chunks} chunks · ${received.cost_usd:.4f} · {elapsed:.1f} s]\n")
        self.out.flush()

    def _draw(self) -> None:
        self.out.write(_CLEAR_LINE + self.line())
        self.out.flush()
        self._drawn = True
