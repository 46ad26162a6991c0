"""A stream relayed over gRPC reads the same whether its text chunks are read by their fields
(agent_server/bindings/grpc_text.py, as ``TextLine``) or through ProtoJSON and the models, on our own server's
stream (text chunks with a cost, a data chunk, a last chunk marked)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_server import create_app
from agent_server.bindings.grpc_text import text_update_of
from gateway.peers import grpc as grpc_peer
from gateway.peers.base import TextLine, items_of
from protocol import GRPC_BINDING, StatusEvent
from protocol.a2a.text_updates import TextUpdate
from tests.support.chunk_agents import chunks_agent, reads_after_the_end, relayed
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

CHUNKS = 300


@pytest.fixture(scope="module")
def ours() -> Iterator[str]:
    with serve_app(create_app(chunks_agent(GRPC_BINDING, CHUNKS), grpc_port=0)) as url:
        yield url


async def test_our_grpc_stream_reads_the_same_with_and_without_the_fast_path(
    ours: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[TextUpdate] = []

    def counted(message: Any) -> TextUpdate | None:
        update = text_update_of(message)
        if update is not None:
            read.append(update)
        return update

    monkeypatch.setattr(grpc_peer, "text_update_of", counted)
    fast = await relayed(ours, "go", "fast")
    assert len(read) >= CHUNKS - 2  # every text chunk but the ones that say lastChunk
    monkeypatch.setattr(grpc_peer, "text_update_of", lambda message: None)
    slow = await relayed(ours, "go", "slow")
    assert fast == slow
    state, text, _, _, progress = fast
    assert state == "completed" and text.startswith("chunk-0 chunk-1 ")
    assert len([p for p in progress if p["kind"] == "artifact"]) == CHUNKS + 1


async def test_the_messages_already_arrived_come_together(ours: str) -> None:
    """The messages read ahead while the reader was busy are passed on as one list, so the engine records them at
    once."""
    reads = await reads_after_the_end(ours)
    assert max(len(items_of(read)) for read in reads) > 1
    items = [item for read in reads for item in items_of(read)]
    assert sum(isinstance(item, TextLine) for item in items) >= CHUNKS - 2
    assert isinstance(items[-1], StatusEvent) and items[-1].final
