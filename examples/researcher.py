"""A streaming "researcher": it reports findings on a topic as text chunks, each with a cost.

Chunks come at a steady pace (every 50 ms by default) and the agent stops at once when
its task is canceled, since cancellation arrives at its next ``await``. A request's
``metadata`` may set ``chunks`` (1..10000) and ``intervalS`` (0..10 seconds).

    switchboard serve examples/researcher.py:agent --port 8002
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio

from agent_server import HostedAgent, TaskContext, TextChunk, create_app

DEFAULT_CHUNKS = 40
DEFAULT_INTERVAL_S = 0.05
COST_PER_CHUNK_USD = 0.0005

_ANGLES = ("background", "prior work", "open questions", "evidence", "counterpoints", "sources", "summary")


def make_researcher(
    *,
    name: str = "researcher",
    chunks: int = DEFAULT_CHUNKS,
    interval_s: float = DEFAULT_INTERVAL_S,
    cost_per_chunk_usd: float = COST_PER_CHUNK_USD,
) -> HostedAgent:
    """A researcher with its own pacing; request metadata may still override it per task."""

    async def research(ctx: TaskContext) -> AsyncIterator[TextChunk]:
        topic = ctx.text.strip() or "the question"
        count = _bounded_int(ctx.metadata.get("chunks"), chunks, 1, 10_000)
        pause = _bounded_float(ctx.metadata.get("intervalS"), interval_s, 0.0, 10.0)
        for index in range(count):
            await anyio.sleep(pause)
            angle = _ANGLES[index % len(_ANGLES)]
            yield TextChunk(f"[{index + 1}/{count}] {angle} on {topic}.\n", cost_usd=cost_per_chunk_usd)

    return HostedAgent(
        name=name,
        handler=research,
        description="Streams research notes on a topic, chunk by chunk, each with a cost.",
        skills=[{"id": "research", "name": "Research", "description": "Streams findings on a topic."}],
    )


def _bounded_int(value: Any, default: int, low: int, high: int) -> int:
    return min(max(int(value), low), high) if isinstance(value, int | float) else default


def _bounded_float(value: Any, default: float, low: float, high: float) -> float:
    return min(max(float(value), low), high) if isinstance(value, int | float) else default


agent = make_researcher()
app = create_app(agent)
