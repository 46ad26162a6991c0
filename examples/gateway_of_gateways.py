"""A gateway used as an agent of another gateway.

    python -m examples.gateway_of_gateways

The billing desk is a whole gateway (a swarm with its own refund tool) serving the A2A
binding at its root. The front door is a second gateway: it registers the billing desk
by URL, like any agent service, hands a customer to it, and also calls it as a sync
agent tool. Offline model, loopback only.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import httpx
import orjson

from examples._loopback import serve_app
from gateway import Agent, MemoryEventLog, MemorySessionStore, tool
from gateway.service import GatewayService, create_gateway_app


@tool
def issue_refund(order_id: str) -> str:
    """Refund a duplicate charge on an order.

    Args:
        order_id: the order, e.g. ORD-77
    """
    return f"refund of the duplicate charge on {order_id} issued"


def gateway_app(starting_agent: Agent, name: str) -> Any:
    service = GatewayService(starting_agent, session_store=MemorySessionStore(), event_log=MemoryEventLog(), name=name)
    return create_gateway_app(service)


async def _post_json(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post(path, json=body)
    if response.status_code >= 400:
        raise RuntimeError(f"{path}: {response.status_code} {response.text}")
    return dict(response.json())


async def _talk(client: httpx.AsyncClient, session: str, text: str) -> list[dict[str, Any]]:
    """One customer message to the front door, its events printed as they arrive."""
    print(f"customer> {text}")
    events: list[dict[str, Any]] = []
    async with client.stream("POST", f"/sessions/{session}/messages", json={"message": text}) as response:
        async for line in response.aiter_lines():
            if not line:
                continue
            event = orjson.loads(line)
            events.append(event)
            if event["type"] == "handoff":
                print(f"  [{event['source']} -> {event['target']}] {event.get('reason') or ''}")
            elif event["type"] == "run_completed":
                print(f"  {event['active_agent_name']}> {event['content']}")
    return events


async def main() -> int:
    billing_desk = Agent(
        "refunds", "You are the billing desk. Refund duplicate charges on orders.", tools=[issue_refund]
    )
    front_door = Agent("triage", "You are the front door. Route customers to the right desk.")
    async with (
        serve_app(gateway_app(billing_desk, "billing-desk")) as desk_url,
        serve_app(gateway_app(front_door, "front-door")) as front_url,
        httpx.AsyncClient(base_url=front_url, timeout=20) as client,
    ):
        print(f"billing desk gateway at {desk_url}, front door gateway at {front_url}")
        agent = await _post_json(client, "/agents", {"url": desk_url})
        print(
            f"registered {agent['name']!r} by URL; its card lists skills {[s['id'] for s in agent['card']['skills']]}"
        )
        await _post_json(client, "/tools", {"name": "ask_billing_desk", "agent": desk_url, "mode": "sync"})

        events = await _talk(client, "c-1", "I was charged twice for order ORD-77, I need a refund from billing")
        handed = any(e["type"] == "handoff" and e["target"] == "billing-desk" for e in events)
        answered = "ORD-77" in events[-1].get("content", "")

        result = (await _post_json(client, "/tools/ask_billing_desk/call", {"input": "refund order ORD-88"}))["result"]
        print(f"tool ask_billing_desk -> {result['state']}: {result['text']}")
        called = result["state"] == "completed" and "ORD-88" in result["text"]

    ok = handed and answered and called
    print("all steps behaved as expected" if ok else "a step did not behave as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
