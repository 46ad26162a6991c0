"""A Gateway used inside an agent's handler keeps its calls within what is left of its caller's limits.

The handler's account (agent_server/hop.py) is held here by hand, as the agent server holds it
for a handler: a call gets no more budget than is left and spends from it, a streaming call is
ended at the caller's deadline (its cancel sent), and what is left travels on to the agent.
"""

from __future__ import annotations

import pytest

from agent_server.hop import HopAccount
from agent_server.testing import Probe, scripted_agent
from gateway import Gateway, MemoryEventLog
from gateway.errors import AgentToolError
from protocol.hop_limits import HopLimits, now_ms

pytestmark = pytest.mark.anyio


async def test_a_call_spends_from_the_callers_budget_and_stops_where_it_runs_out() -> None:
    account = HopAccount(HopLimits(budget_usd=0.005))
    async with Gateway(event_log=MemoryEventLog()) as gateway:
        uri = gateway.register_local_agent("c", scripted_agent("c"))
        gateway.add_agent_tool("first", uri, mode="streaming")
        gateway.add_agent_tool("second", uri, mode="streaming", budget={"max_cost_usd": 1.0})
        with account.held():
            first = await gateway.call_tool("first", "stream 3 0 0.001")
            assert first.cost_usd == pytest.approx(0.003) and account.spent_usd == pytest.approx(0.003)
            with pytest.raises(AgentToolError) as failed:
                await gateway.call_tool("second", "stream 10 0 0.001")
    assert failed.value.reason == "budget_exceeded", "its own budget is 1.0, what was left of the caller's 0.002"
    assert account.spent_usd == pytest.approx(0.006), "the line that crossed the limit was spent too"
    assert account.unreported() == pytest.approx(0.006) and account.unreported() == 0.0, "reported up once"


async def test_a_streaming_call_ends_at_the_callers_deadline_and_cancels_the_agents_task() -> None:
    probe = Probe()
    account = HopAccount(HopLimits(deadline_ms=now_ms() + 300))
    async with Gateway(event_log=MemoryEventLog()) as gateway:
        gateway.add_agent_tool("slow", gateway.register_local_agent("c", scripted_agent("c", probe)), mode="streaming")
        with account.held(), pytest.raises(AgentToolError) as failed:
            await gateway.call_tool("slow", "sleep")
    assert failed.value.reason == "deadline_timeout"
    task_id = failed.value.partial.task_id if failed.value.partial is not None else None
    assert task_id is not None and probe.wait_canceled(task_id) is not None
