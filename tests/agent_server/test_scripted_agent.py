"""The test agent's Probe sees every cancel that reaches the agent's code, also one that finds it at a ``yield``.

A cancel that lands while the server writes the item the agent yielded (a slow store, a
loaded machine) closes the agent's generator at that ``yield`` instead of raising at an
await; tests that wait for ``canceled_at`` must see that one too, or they wait in vain.
"""

from __future__ import annotations

import anyio
import pytest

from agent_server import MemoryTaskStore, TaskManager
from agent_server.testing import Probe, scripted_agent
from protocol import ArtifactEvent, Message, StreamEvent, TaskSendParams, TaskState
from tests.support.waiting import until

pytestmark = pytest.mark.anyio


class _SlowToAppendChunks(MemoryTaskStore):
    """Every chunk's write takes a while: the only time the run is suspended is in the store, not in the agent."""

    async def append_event(self, task_id: str, event: StreamEvent) -> None:
        if isinstance(event, ArtifactEvent):
            await anyio.sleep(0.05)
        await super().append_event(task_id, event)


async def test_a_cancel_that_finds_the_agent_at_a_yield_is_seen_and_a_handoff_is_not() -> None:
    probe = Probe()
    manager = TaskManager(scripted_agent(probe=probe), _SlowToAppendChunks())
    with anyio.fail_after(10):
        async with manager.running():
            await manager.start(TaskSendParams(id="busy", message=Message.user("stream 50 0 0")))  # no await of its own
            await until(lambda: probe.started_at("busy") is not None, "the agent to start task busy")
            canceled = await manager.cancel("busy")
            handed = await manager.send(TaskSendParams(id="handoff", message=Message.user("handoff other")))
    assert canceled.status.state is TaskState.CANCELED
    assert probe.canceled_at("busy") is not None, "the close at the yield counts as the cancel reaching the agent"
    assert handed.status.state is TaskState.COMPLETED and probe.canceled_at("handoff") is None
