"""A stream relayed over a standard binding reads the same whether its text chunks take the fast path (read without
models as ``TextLine``: protocol/a2a/text_updates.py over JSON-RPC and HTTP+JSON, agent_server/bindings/grpc_text.py
over gRPC) or the models, on real payloads: our own server's on each binding (text chunks with a cost, a data chunk,
several reads) and the a2a-sdk 1.3 server's (whose chunks say ``lastChunk`` and ``cost_usd``, so they are left to
the models). And what one SSE read brought is passed on together."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

import pytest

from agent_server import create_app
from gateway.peers import grpc as grpc_peer, sse
from protocol import GRPC_BINDING, HTTP_JSON_BINDING, JSONRPC_BINDING
from tests.support.chunk_agents import (
    assert_passed_on_together,
    assert_relayed_whole,
    chunks_agent,
    reads_after_the_end,
    relayed_both_ways,
)
from tests.support.sdk_agents import serve_sdk_agent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

CHUNKS = 300
FAST_PATHS = {
    JSONRPC_BINDING: (sse, "read_text_update"),
    HTTP_JSON_BINDING: (sse, "read_text_update"),
    GRPC_BINDING: (grpc_peer, "text_update_of"),
}


@dataclass(frozen=True)
class Served:
    """Our server, its card offering one binding; where the gateway's fast path for that binding is."""

    url: str
    module: ModuleType
    fast_path: str


@pytest.fixture(scope="module", params=list(FAST_PATHS))
def ours(request: pytest.FixtureRequest) -> Iterator[Served]:
    grpc_port = 0 if request.param == GRPC_BINDING else None
    with serve_app(create_app(chunks_agent(request.param, CHUNKS), grpc_port=grpc_port)) as url:
        yield Served(url, *FAST_PATHS[request.param])


@pytest.fixture(scope="module", params=[False, True], ids=["sdk-jsonrpc", "sdk-rest"])
def sdk(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve_sdk_agent(rest=request.param) as (url, _):
        yield url


async def test_our_stream_reads_the_same_with_and_without_the_fast_path(
    ours: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow, taken = await relayed_both_ways(ours.url, "go", monkeypatch, ours.module, ours.fast_path)
    assert taken >= CHUNKS - 2  # every text chunk but the ones that say lastChunk
    assert fast == slow
    assert_relayed_whole(fast, CHUNKS)


async def test_the_sdk_stream_reads_the_same_with_and_without_the_fast_path(
    sdk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, slow, _ = await relayed_both_ways(sdk, "stream 5 0 0.01", monkeypatch, sse, "read_text_update")
    assert fast == slow
    assert fast[1] == "".join(f"chunk-{index} " for index in range(5))


@pytest.mark.parametrize("binding", [JSONRPC_BINDING, HTTP_JSON_BINDING])
async def test_the_events_of_one_read_come_together(binding: str) -> None:
    """As the NDJSON peer does, the items of one SSE read are one list, so the engine records them at once."""
    with serve_app(create_app(chunks_agent(binding, CHUNKS))) as url:
        assert_passed_on_together(await reads_after_the_end(url), CHUNKS)
