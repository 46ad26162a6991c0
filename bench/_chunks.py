"""What the streaming-binding benches share: the agent that makes N text chunks at once, and their rounds.

The agent's work is nothing but yielding, so what a bench of it measures is the path a chunk
takes (a binding, a relay), not the agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from agent_server import HostedAgent, TaskContext, TextChunk


@dataclass(frozen=True)
class Settings:
    """Rounds of streams: each path, each round, at most ``streams`` streams or ``seconds``."""

    rounds: int
    seconds: float
    streams: int


def chunks_agent() -> HostedAgent:
    """A message ``N`` makes N text chunks, at once."""

    async def chunks(ctx: TaskContext) -> AsyncIterator[TextChunk]:
        for index in range(int(ctx.text)):
            yield TextChunk(f"chunk-{index} ")

    return HostedAgent("chunks", chunks, description="N chunks at once.")
