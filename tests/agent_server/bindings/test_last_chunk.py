"""The last chunk of a streamed artifact is marked ``lastChunk``, as the real a2a-sdk client reads it.

Google ADK's ``RemoteA2aAgent`` (streaming is its default) treats every artifact chunk
before one marked ``lastChunk`` as partial: without the mark its answer never reaches the
ADK session. ADK reads through the a2a-sdk client, so the check is what that client hands
on: the last artifact update of each stream is marked, its text is whole, and only the last
is. Through v1.0 and v0.3, for chunks that come in a burst with the end (marked in place)
and for an agent that pauses after its last chunk (marked by a closing chunk), on an agent
server and on the gateway.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from typing import Any

import anyio
import pytest
from a2a.client import Client
from a2a.types import Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from agent_server import HostedAgent, TaskContext
from tests.support.a2a_clients import agent_and_gateway

pytestmark = pytest.mark.anyio


def _pausing_agent() -> HostedAgent:
    """``burst``: three chunks and the end together; ``pause``: three chunks, then a pause before the end."""

    async def run(ctx: TaskContext) -> AsyncGenerator[Any, None]:
        for word in ("one ", "two ", "three"):
            if ctx.text == "pause":
                await anyio.sleep(0.02)
            yield word
        if ctx.text == "pause":
            await anyio.sleep(0.05)  # the stream has written "three" before the end is known

    return HostedAgent("counter", run, description="Counts to three.")


@pytest.fixture(scope="module")
def faces() -> Iterator[dict[str, str]]:
    with agent_and_gateway(_pausing_agent()) as urls:
        yield urls


@pytest.mark.parametrize("how", ["burst", "pause"])
async def test_the_last_chunk_the_sdk_client_reads_is_marked_last_chunk(sdk_client: Client, how: str) -> None:
    request = SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=f"m-{how}", parts=[Part(text=how)]))
    with anyio.fail_after(20):
        events: list[StreamResponse] = [event async for event in sdk_client.send_message(request)]
    chunks = [event.artifact_update for event in events if event.HasField("artifact_update")]
    assert chunks and chunks[-1].last_chunk, "the final chunk is marked lastChunk"
    assert not any(chunk.last_chunk for chunk in chunks[:-1]), "only the final one"
    assert "".join(part.text for chunk in chunks for part in chunk.artifact.parts) == "one two three"
    assert {chunk.artifact.artifact_id for chunk in chunks} == {chunks[0].artifact.artifact_id}
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
