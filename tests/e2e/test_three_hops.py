"""A -> B -> C, three servers on 127.0.0.1: a gateway A, an agent server B whose handler calls C through a
``Gateway``, and an agent server C (the scripted agent).

What must reach C from the top: a cancel of A's run (A's engine cancels B's task, B's handler
sees the cancellation, and its Gateway call sends C its cancel; each hop's acknowledgement is an
``agent_tool_terminated`` event, A's in A's log, B's in the log of B's Gateway), the budget
set at A (C is stopped once it has spent it) and the deadline of A's tool.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from agent_server.testing import Probe, scripted_agent
from protocol.hop_limits import now_ms
from tests.support.gateway_service import agent_server, gateway_server, triage_service
from tests.support.hops import Relayed, cancel_once_invoked, limits_seen, relay_agent
from tests.support.waiting import DEADLINE_S, wait_until

BUDGET_USD = 0.05
TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def chain() -> Iterator[tuple[str, str, Relayed, Relayed, Probe]]:
    """A's URL, C's URL, what B saw, what C saw, C's probe."""
    probe, b_seen, c_seen = Probe(), Relayed(), Relayed()
    with (
        agent_server(limits_seen(scripted_agent("c", probe), c_seen)) as c_url,
        agent_server(relay_agent(c_url, b_seen)) as b_url,
        gateway_server(triage_service()) as a_url,
        httpx.Client(base_url=a_url, timeout=60) as http,
    ):
        for name, mode, extra in (
            ("ask_b", "streaming", {}),
            ("ask_b_sync", "sync", {"max_cost_usd": BUDGET_USD, "timeout_ms": TIMEOUT_MS}),
        ):
            created = http.post("/tools", json={"name": name, "agent": b_url, "mode": mode, **extra, "attach_to": []})
            assert created.status_code == 201, created.text
        yield a_url, c_url, b_seen, c_seen, probe


def _events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line:
            yield orjson.loads(line)


def _c_task(b_seen: Relayed, b_task: str) -> dict[str, Any]:
    """B's Gateway's events of its call to C, once B's handler has ended."""
    wait_until(lambda: b_seen.events_of(b_task) is not None, "B's handler to end")
    events = b_seen.events_of(b_task)
    assert events is not None
    return {"events": events, "task_id": next(e["task_id"] for e in events if e["type"] == "agent_tool_invoked")}


def test_a_cancel_at_a_reaches_c_and_each_hop_acknowledges_it(chain: tuple[str, str, Relayed, Relayed, Probe]) -> None:
    a_url, c_url, b_seen, c_seen, probe = chain
    c_before = set(c_seen.limits)
    with httpx.Client(base_url=a_url, timeout=60) as http:
        _, a_events, b_task = cancel_once_invoked(
            http,
            "/tools/ask_b/call",
            {"input": "sleep", "stream": True},
            lambda _: len(set(c_seen.limits) - c_before) == 1,  # C started B's task
            http,
        )
    a_end = a_events[-1]
    assert a_end["type"] == "agent_tool_terminated" and a_end["reason"] == "cancelled"
    assert a_end["cancel_sent"] is True and a_end["cancel_acknowledged"] is True, "B acknowledged A's cancel"
    c = _c_task(b_seen, b_task)
    b_end = c["events"][-1]
    assert b_end["type"] == "agent_tool_terminated" and b_end["reason"] == "cancelled"
    assert b_end["cancel_sent"] is True and b_end["cancel_acknowledged"] is True, "C acknowledged B's cancel"
    assert probe.wait_canceled(c["task_id"], timeout_s=DEADLINE_S) is not None, "C's own code saw the cancel"
    c_task = httpx.get(f"{c_url}/tasks/{c['task_id']}", timeout=30).json()
    assert c_task["status"]["state"] == "canceled"


def test_the_budget_set_at_a_stops_c_and_its_deadline_reaches_c(
    chain: tuple[str, str, Relayed, Relayed, Probe],
) -> None:
    a_url, c_url, b_seen, c_seen, probe = chain
    started_ms = now_ms()
    with httpx.Client(base_url=a_url, timeout=60) as http:
        answer = http.post("/tools/ask_b_sync/call", json={"input": "stream 1000 0.01 0.01"})
    assert answer.status_code == 502, answer.text
    data = answer.json()["error"]["data"]
    b_task = data["partial"]["task_id"]
    b_limits = b_seen.limits[b_task]
    assert b_limits.budget_usd == BUDGET_USD
    assert b_limits.deadline_ms is not None
    assert started_ms + TIMEOUT_MS <= b_limits.deadline_ms <= now_ms() + TIMEOUT_MS
    c = _c_task(b_seen, b_task)
    c_limits = c_seen.limits[c["task_id"]]
    assert c_limits.deadline_ms == b_limits.deadline_ms, "A's deadline reached C unchanged"
    assert c_limits.budget_usd == BUDGET_USD
    b_end = c["events"][-1]
    assert b_end["type"] == "agent_tool_terminated" and b_end["reason"] == "budget_exceeded"
    assert b_end["max_cost_usd"] == BUDGET_USD and b_end["cancel_acknowledged"] is True
    assert probe.wait_canceled(c["task_id"], timeout_s=DEADLINE_S) is not None, "C was stopped"
    c_task = httpx.get(f"{c_url}/tasks/{c['task_id']}", timeout=30).json()
    assert c_task["status"]["state"] == "canceled"
    spent = b_end["accumulated_cost_usd"]
    assert BUDGET_USD < spent <= BUDGET_USD + 0.01, "C stopped at the line that crossed the budget"
    assert data["reason"] == "budget_exceeded", "A sees the same spend (B's server reported it up)"
    assert data["partial"]["cost_usd"] == pytest.approx(spent), "counted once, not once per hop"
