"""A stream relayed over JSON-RPC or HTTP+JSON reads the same whether its text chunks take the fast path
(protocol/a2a/text_updates.py, read as ``TextLine``) or the models, on real payloads: our own server's (text chunks
with a cost, a data chunk, several reads) and the a2a-sdk 1.3 server's (whose chunks say ``lastChunk`` and
``cost_usd``, so they are left to the models)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agent_server import create_app
from gateway.peers import sse
from gateway.peers.base import TextLine, items_of
from protocol import HTTP_JSON_BINDING, JSONRPC_BINDING, StatusEvent
from protocol.a2a.text_updates import TextUpdate, read_text_update
from tests.support.chunk_agents import chunks_agent, reads_after_the_end, relayed
from tests.support.sdk_agents import serve_sdk_agent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

CHUNKS = 300


@pytest.fixture(scope="module", params=[JSONRPC_BINDING, HTTP_JSON_BINDING])
def ours(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve_app(create_app(chunks_agent(request.param, CHUNKS))) as url:
        yield url


@pytest.fixture(scope="module", params=[False, True], ids=["sdk-jsonrpc", "sdk-rest"])
def sdk(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve_sdk_agent(rest=request.param) as (url, _):
        yield url


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[TextUpdate]:
    """The text updates the fast path reads from now on."""
    read: list[TextUpdate] = []

    def counted(result: Any) -> TextUpdate | None:
        update = read_text_update(result)
        if update is not None:
            read.append(update)
        return update

    monkeypatch.setattr(sse, "read_text_update", counted)
    return read


async def test_our_stream_reads_the_same_with_and_without_the_fast_path(
    ours: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_reads = _counting(monkeypatch)
    fast = await relayed(ours, "go", "fast")
    assert len(fast_reads) >= CHUNKS - 2  # every text chunk but the ones that say lastChunk
    monkeypatch.setattr(sse, "read_text_update", lambda result: None)
    slow = await relayed(ours, "go", "slow")
    assert fast == slow
    state, text, _, _, progress = fast
    assert state == "completed" and text.startswith("chunk-0 chunk-1 ")
    assert len([p for p in progress if p["kind"] == "artifact"]) == CHUNKS + 1


async def test_the_sdk_stream_reads_the_same_with_and_without_the_fast_path(
    sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = await relayed(sdk, "stream 5 0 0.01", "fast")
    monkeypatch.setattr(sse, "read_text_update", lambda result: None)
    slow = await relayed(sdk, "stream 5 0 0.01", "slow")
    assert fast == slow
    assert fast[1] == "".join(f"chunk-{index} " for index in range(5))


async def test_the_events_of_one_read_come_together(ours: str) -> None:
    """As the NDJSON peer does, the items of one read are one list, so the engine records them at once."""
    reads = await reads_after_the_end(ours)
    assert max(len(items_of(read)) for read in reads) > 1
    items = [item for read in reads for item in items_of(read)]
    assert sum(isinstance(item, TextLine) for item in items) >= CHUNKS - 2
    assert isinstance(items[-1], StatusEvent) and items[-1].final
