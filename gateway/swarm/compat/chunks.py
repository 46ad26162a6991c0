"""A turn's events as the chunks swarm's ``run(..., stream=True)`` yields.

Swarm streams each model response between ``{"delim": "start"}`` and ``{"delim": "end"}``:
its first chunk names the ``sender`` (the agent) with ``role``, the text follows in
``content`` pieces, the tool calls in one ``tool_calls`` chunk. Switchboard records the
same response as ``text_delta`` events and then one ``message`` event, for local and
remote agents alike, so that is what is read here; tool results, handoffs and the rest
have no chunk in swarm's stream and get none.
"""

from __future__ import annotations

from typing import Any

from gateway.recording.events import Event, MessageEvent, TextDeltaEvent

Chunk = dict[str, Any]


class ChunkWriter:
    """Turns events into chunks, one event at a time; it remembers which agent's message is open."""

    def __init__(self) -> None:
        self._open: str | None = None

    def chunks(self, event: Event) -> list[Chunk]:
        if isinstance(event, TextDeltaEvent):
            if self._open == event.agent:
                return [{"content": event.text}]
            return [*self._close(), *self._start(event.agent, event.text)]
        if isinstance(event, MessageEvent):
            chunks = [] if self._open == event.agent else [*self._close(), *self._start(event.agent, event.content)]
            if event.tool_calls:
                chunks.append({"tool_calls": [{"index": i, **call} for i, call in enumerate(event.tool_calls)]})
            return [*chunks, *self._close()]
        return []

    def _start(self, agent: str, content: str | None) -> list[Chunk]:
        self._open = agent
        return [{"delim": "start"}, {"role": "assistant", "sender": agent, "content": content or None}]

    def _close(self) -> list[Chunk]:
        if self._open is None:
            return []
        self._open = None
        return [{"delim": "end"}]
