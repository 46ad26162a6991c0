"""A chain of agents on loopback for the tests of what travels through hops: B calls C through a ``Gateway``.

``relay_agent`` is B: each message is passed to C as a streaming agent tool (no budget or
deadline of its own: whatever limits C gets come from B's caller), and C's text comes back
as B's chunks, without a cost of their own (the server adds what the call spent, once). What
B's Gateway recorded of the call is kept in ``Relayed.events``, per B task, as B's own
evidence of the hop B -> C. ``limits_seen`` wraps an agent to note the limits each task got;
``cancel_once_invoked`` cancels a streamed run of a gateway once its agent has started.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import AsyncGenerator, Callable
from typing import Any

import anyio
import httpx
import orjson

from agent_server import HostedAgent, TaskContext, TextChunk
from agent_server.hosted import Failed
from gateway import Gateway, MemoryEventLog
from gateway.errors import AgentToolError
from protocol.hop_limits import HopLimits
from tests.support.waiting import wait_until


class Relayed:
    """What B saw, per B task id: its limits and its Gateway's events for the call to C."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.limits: dict[str, HopLimits] = {}
        self.events: dict[str, list[dict[str, Any]]] = {}

    def note(self, task_id: str, limits: HopLimits | None = None, events: list[dict[str, Any]] | None = None) -> None:
        with self._lock:
            if limits is not None:
                self.limits[task_id] = limits
            if events is not None:
                self.events[task_id] = events

    def events_of(self, task_id: str) -> list[dict[str, Any]] | None:
        with self._lock:
            return self.events.get(task_id)


def relay_agent(c_url: str, seen: Relayed) -> HostedAgent:
    """B: asks C (``c_url``) what it was asked, through a Gateway, and streams C's text back."""

    async def relay(ctx: TaskContext) -> AsyncGenerator[Any, None]:
        seen.note(ctx.task_id, limits=ctx.limits)
        log = MemoryEventLog()
        run_id = f"b-{ctx.task_id}"
        await log.open_run(run_id)
        try:
            async with Gateway(event_log=log) as gateway:
                gateway.add_agent_tool("ask_c", c_url, mode="streaming")
                try:
                    result = await gateway.call_tool("ask_c", ctx.text, run_id=run_id)
                except AgentToolError as exc:
                    yield Failed(f"C failed ({exc.reason}): {exc.message}")
                    return
                yield TextChunk(result.text)
        finally:
            with anyio.CancelScope(shield=True):
                seen.note(ctx.task_id, events=[event.to_dict() for event in await log.read(run_id, -1)])

    return HostedAgent("relay", relay, description="Asks C, through a Gateway, and passes its answer on.")


def limits_seen(agent: HostedAgent, seen: Relayed) -> HostedAgent:
    """``agent``, noting the limits each of its tasks was sent (C's side of the hop)."""

    def noted(ctx: TaskContext) -> Any:
        seen.note(ctx.task_id, limits=ctx.limits)
        return agent.handler(ctx)

    return HostedAgent(agent.name, noted, description=agent.description)


def cancel_once_invoked(
    http: httpx.Client, path: str, body: dict[str, Any], ready: Callable[[str], bool], canceller: httpx.Client
) -> tuple[str, list[dict[str, Any]], str]:
    """Stream a run started by ``path``; once its agent call is invoked and ``ready(task_id)``, ``canceller`` cancels
    the run. The run id, every event the stream had until it ended, and the called agent's task id."""
    events: list[dict[str, Any]] = []
    task_id = ""
    with http.stream("POST", path, json=body) as response:
        run_id = response.headers["x-run-id"]
        for line in response.iter_lines():
            if not line:
                continue
            events.append(orjson.loads(line))
            if events[-1]["type"] == "agent_tool_invoked":
                task_id = events[-1]["task_id"]
                wait_until(functools.partial(ready, task_id), "the agent to start the task")
                assert canceller.post(f"/runs/{run_id}/cancel").status_code == 202
    return run_id, events, task_id
