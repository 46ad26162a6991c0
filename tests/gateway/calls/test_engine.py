"""One engine calls every peer: an agent tool and a remote swarm member meet a bad peer alike.

Against real servers on loopback: the misbehaving A2A server of agent_tool_support, the
scripted agent, and agent servers that hand off by URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agent_server import Handoff, HostedAgent, TaskContext, TextChunk, create_app
from gateway import AgentToolError, AgentToolTimeout, Gateway, HostAllowlist, PeerLimits, RemoteAgent, Runner
from gateway.recording.events import Event
from protocol import AgentCard
from tests.support.agent_tools import FaultyAgent
from tests.support.servers import serve_app

pytestmark = pytest.mark.anyio

LINE_LIMIT = 64 * 1024


def _summary(events: list[Event]) -> list[tuple[str, Any, Any]]:
    """The call's events as (type, reason, cancel_sent): what must not depend on who called."""
    return [
        (e.type, e.fields.get("reason"), e.fields.get("cancel_sent"))
        for e in events
        if e.type.startswith("agent_tool_")
    ]


@pytest.mark.parametrize(
    ("command", "streaming", "reason", "cancel_sent"),
    [
        ("negative_cost", True, "bad_answer", None),
        ('meta:{"handoff": "billing"}', False, "bad_answer", None),
        ('meta:{"cost_usd": "free"}', False, "bad_answer", None),
        ("huge", True, "line_too_long", True),
    ],
)
async def test_the_same_bad_answer_fails_an_agent_tool_and_a_swarm_member_alike(
    faulty: tuple[FaultyAgent, str], command: str, streaming: bool, reason: str, cancel_sent: bool | None
) -> None:
    agent, url = faulty
    async with Gateway(limits=PeerLimits(max_line_bytes=LINE_LIMIT)) as gateway:
        gateway.add_agent_tool("faulty", url, mode="streaming" if streaming else "sync")
        with pytest.raises(AgentToolError) as as_tool:
            await gateway.call_tool("faulty", command, run_id="r-tool")
        tool_events = await gateway.event_log.read("r-tool")

        member = RemoteAgent(gateway.peer(url), AgentCard(name="faulty", url=url), streaming=streaming)
        runner = Runner(member, gateway=gateway)
        with pytest.raises(AgentToolError) as as_member:
            await runner.run_async("s", command)
        [member_run] = [run for run in await gateway.event_log.list_runs() if run != "r-tool"]
        member_events = await gateway.event_log.read(member_run)

    assert as_tool.value.reason == as_member.value.reason == reason
    assert type(as_tool.value) is type(as_member.value)
    assert _summary(tool_events) == _summary(member_events)
    assert _summary(tool_events)[-1][1:] == (reason, cancel_sent)
    assert tool_events[0].fields["tool"] == "faulty" and member_events[1].fields["member"] == "faulty"
    assert member_events[-1].type == "run_failed"
    if cancel_sent:
        assert agent.canceled.count(as_tool.value.partial.task_id) == 1  # type: ignore[union-attr]
        assert agent.canceled.count(as_member.value.partial.task_id) == 1  # type: ignore[union-attr]


def _front(target: str) -> HostedAgent:
    async def front(ctx: TaskContext) -> AsyncIterator[Any]:
        yield "Passing you on. "
        yield Handoff(target, "a technical question")

    return HostedAgent("front", front, description="The front desk.")


def _tech() -> HostedAgent:
    async def tech(ctx: TaskContext) -> AsyncIterator[Any]:
        yield TextChunk("Tech here.")

    return HostedAgent("tech", tech, description="Technical support.")


@pytest.mark.parametrize("spelling", ["{url}", "{url}/"])
async def test_a_remote_agents_handoff_to_the_url_of_an_agent_registered_by_that_url_reaches_it(spelling: str) -> None:
    with serve_app(create_app(_tech())) as tech_url:
        with serve_app(create_app(_front(spelling.format(url=tech_url)))) as front_url:
            async with Gateway(allowed_hosts=HostAllowlist([])) as gateway:
                runner = Runner(await RemoteAgent.connect(front_url, gateway), gateway=gateway)
                tech = await runner.register_remote(tech_url)
                response = await runner.run_async("s", "my router is broken")
    assert [(e.fields["source"], e.fields["target"]) for e in response.events_of("handoff")] == [("front", "tech")]
    assert response.events_of("handoff_refused") == []
    assert (response.active_agent_name, response.content) == ("tech", "Tech here.")
    assert runner.agents["tech"] is tech, "the registered agent itself, not a second connection to it"


async def test_a_sync_call_past_its_deadline_always_ends_as_a_timeout(scripted_url: str) -> None:
    """The deadline decides, whatever the canceled task's answer races it with (50 tries)."""
    async with Gateway() as gateway:
        gateway.add_agent_tool("slow", scripted_url, timeout_ms=100)
        reasons = []
        with anyio.fail_after(60):
            for _ in range(50):
                with pytest.raises(AgentToolError) as caught:
                    await gateway.call_tool("slow", "sleep 3")
                reasons.append((type(caught.value), caught.value.reason))
    assert set(reasons) == {(AgentToolTimeout, "timeout")}
