"""An agent that streams many text chunks (a data chunk among them), its card offering one standard binding, and
what a streaming tool call of an agent leaves: what the relays' fast paths are checked on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import pytest

from agent_server import DataChunk, HostedAgent, TaskContext, TextChunk
from gateway import Gateway, HostAllowlist
from gateway.peers.base import StreamRead, TextLine, items_of
from protocol import AgentCard, Message, StatusEvent, TaskSendParams, TextPart
from tests.support.agent_tools import call_events
from tests.support.waiting import until


def chunks_agent(binding: str, chunks: int) -> HostedAgent:
    """``chunks`` text chunks with a cost, a data chunk in the middle; its card offering ``binding`` (1.0) only."""

    async def stream(ctx: TaskContext) -> AsyncIterator[TextChunk | DataChunk]:
        for index in range(chunks):
            yield TextChunk(f"chunk-{index} ", cost_usd=0.001 if index % 7 else 0.0)
            if index == chunks // 2:
                yield DataChunk({"half": True})

    agent = HostedAgent("chunks", stream, description="N chunks.")
    full_card = agent.card

    def card(url: str) -> AgentCard:
        full = full_card(url)
        kept = [i for i in full.supported_interfaces if i.protocol_binding == binding and i.protocol_version == "1.0"]
        return full.model_copy(update={"supported_interfaces": kept, "additional_interfaces": None})

    agent.card = card  # type: ignore[method-assign]
    return agent


async def relayed(url: str, message: str, run_id: str) -> tuple[Any, ...]:
    """What a streaming tool call of the agent at ``url`` leaves: its result and its progress events' fields (but
    the ids, which are each call's and task's own)."""
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        gateway.add_agent_tool("relay", url, mode="streaming")
        result = await gateway.call_tool("relay", message, run_id=run_id)
        events = await call_events(gateway, run_id)
    progress = [
        {key: value for key, value in event.fields.items() if key not in ("call_id", "task_id")}
        for event in events
        if event.type == "agent_tool_progress"
    ]
    artifacts = [artifact.to_wire() for artifact in result.artifacts]
    return result.state, result.text, result.cost_usd, artifacts, progress


async def reads_after_the_end(url: str) -> list[StreamRead]:
    """The reads of a stream of the agent at ``url`` (its message ``go``) whose reader, after its first read, waits
    for the task to end: what had arrived meanwhile is in the reads after."""
    async with Gateway(allowed_hosts=HostAllowlist(["127.0.0.1:*"])) as gateway:
        peer = await gateway.peer(url).resolve()
        params = TaskSendParams(message=Message(role="user", parts=[TextPart(text="go")]))
        async with peer.subscribe(params) as stream:
            reads = [await anext(aiter(stream))]
            first = items_of(reads[0])[0]
            assert isinstance(first, StatusEvent | TextLine)
            task_id = first.id

            async def ended() -> bool:
                return (await peer.get(task_id)).status.state.is_terminal

            await until(ended, "the task ended")
            reads += [read async for read in stream]
    return reads


async def relayed_both_ways(
    url: str, message: str, monkeypatch: pytest.MonkeyPatch, module: ModuleType, fast_path: str
) -> tuple[tuple[Any, ...], tuple[Any, ...], int]:
    """``relayed`` twice: with the fast path (the function ``fast_path`` of ``module``) as it is, then turned off
    (it takes nothing); both relays, and how many inputs the fast path took in the first."""
    taken = 0
    read = getattr(module, fast_path)

    def counted(given: Any) -> Any:
        nonlocal taken
        update = read(given)
        taken += update is not None
        return update

    monkeypatch.setattr(module, fast_path, counted)
    fast = await relayed(url, message, "fast")
    monkeypatch.setattr(module, fast_path, lambda given: None)
    return fast, await relayed(url, message, "slow"), taken


def assert_passed_on_together(reads: list[StreamRead], chunks: int) -> None:
    """Some read holds more than one item; the text chunks came as ``TextLine``; the final status came last."""
    assert max(len(items_of(read)) for read in reads) > 1
    items = [item for read in reads for item in items_of(read)]
    assert sum(isinstance(item, TextLine) for item in items) >= chunks - 2  # all but those marked lastChunk
    assert isinstance(items[-1], StatusEvent) and items[-1].final


def assert_relayed_whole(relay: tuple[Any, ...], chunks: int) -> None:
    """A relay of ``chunks_agent``: completed, its text in order, a progress event per chunk (the data one too)."""
    state, text, _, _, progress = relay
    assert state == "completed" and text.startswith("chunk-0 chunk-1 ")
    assert len([p for p in progress if p["kind"] == "artifact"]) == chunks + 1
