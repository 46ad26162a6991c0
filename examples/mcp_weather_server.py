"""A tiny MCP server over stdio with one tool, ``forecast``, that reports progress day by day.

    python examples/mcp_weather_server.py

The weather is made up (the same city always gets the same forecast), so it runs offline.
examples/mcp_tool.py spawns it and calls the tool through the gateway.
"""

from __future__ import annotations

import zlib

import anyio
from mcp.server.mcpserver import Context, MCPServer

SKIES = ("sunny", "cloudy", "light rain", "windy", "thunderstorms", "fog")


def day_forecast(city: str, day: int) -> str:
    seed = zlib.crc32(f"{city.lower()}/{day}".encode())
    return f"{SKIES[seed % len(SKIES)]}, {8 + seed % 20} C"


def build_server() -> MCPServer:
    server = MCPServer("weather")

    @server.tool(description="Forecast the weather of a city for the next days, reporting progress per day.")
    async def forecast(city: str, ctx: Context, days: int = 3, delay_s: float = 0.1) -> str:
        lines: list[str] = []
        for day in range(1, days + 1):
            await anyio.sleep(delay_s)
            lines.append(f"day {day}: {day_forecast(city, day)}")
            await ctx.report_progress(day, days, f"{city} {lines[-1]}")
        return f"{city}, next {days} days: " + "; ".join(lines) + "."

    return server


if __name__ == "__main__":
    build_server().run("stdio")
