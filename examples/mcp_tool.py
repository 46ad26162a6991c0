"""An MCP server's tool used as an agent tool, in sync and streaming mode.

    python -m examples.mcp_tool

The gateway spawns examples/mcp_weather_server.py over stdio (the URI
``mcp+stdio:PYTHON?args=SERVER#forecast``) and calls its ``forecast`` tool like any agent:
sync returns the result; streaming turns the tool's progress notifications into progress
events, printed here as they arrive by following the call's run in the event log. Text
input goes into the tool's one required string argument (``city``); a dict is the
arguments object. Offline. Exits 1 if a step did not behave as expected.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from urllib.parse import quote

import anyio

from gateway import AgentToolResult, Gateway, PeerLimits

SERVER = Path(__file__).resolve().with_name("mcp_weather_server.py")
FORECAST_URI = f"mcp+stdio:{quote(sys.executable)}?args={quote(shlex.join([str(SERVER)]))}#forecast"
SPAWN_TIMEOUT_S = 20.0


async def streamed_call(gateway: Gateway, tool: str, arguments: dict[str, object]) -> AgentToolResult:
    """Call ``tool`` under a run id of our own, printing its progress events while it runs."""
    run_id = "run_forecast_stream"

    async def print_progress() -> None:
        async for event in gateway.event_log.follow(run_id):
            fields = event.fields
            if event.type == "agent_tool_progress" and fields.get("kind") == "status":
                progress = fields["data"][0]
                print(f"   progress {progress['progress']:g}/{progress['total']:g}: {fields.get('text')}")

    async with anyio.create_task_group() as group:
        group.start_soon(print_progress)
        try:
            return await gateway.call_tool(tool, arguments, run_id=run_id)
        finally:
            await gateway.event_log.close_run(run_id)


async def main() -> int:
    failed: list[str] = []
    async with Gateway(limits=PeerLimits(connect_timeout_s=SPAWN_TIMEOUT_S)) as gateway:
        gateway.add_agent_tool("forecast", FORECAST_URI)
        gateway.add_agent_tool("forecast_live", FORECAST_URI, mode="streaming")
        print(f"agent URI: {FORECAST_URI}")

        print("\n1. sync: forecast <- 'Lisbon'")
        result = await gateway.call_tool("forecast", "Lisbon")
        print(f"   {result.state}: {result.text}")
        if result.state != "completed" or not result.text.startswith("Lisbon, next 3 days: day 1:"):
            failed.append("sync forecast")

        print("\n2. streaming: forecast_live <- {'city': 'Oslo', 'days': 4}")
        streamed = await streamed_call(gateway, "forecast_live", {"city": "Oslo", "days": 4})
        print(f"   {streamed.state}: {streamed.text}")
        if streamed.state != "completed" or streamed.chunks != 5 or "day 4:" not in streamed.text:
            failed.append("streamed forecast: 4 progress notifications, then the result")

    print("\nall steps behaved as expected" if not failed else f"\nunexpected: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
