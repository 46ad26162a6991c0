"""The operator's console: a web page served by the gateway at ``/ui`` that reads only its public HTTP API.

The page (``static/``: one HTML file, one script, one style sheet, no library) lists the
agents, tools, sessions and runs, follows a run live (``GET /runs/{id}/events?follow=1``),
draws its handoffs, agent-tool calls, costs and tokens, and posts chat messages, exactly
as the CLI does over HTTP: it has no source of truth of its own. The files are public
(static code, the same for everyone, no data); every request the page makes carries the
token the user typed, when the gateway has tokens (docs/console.md).
"""

from gateway.console.assets import CONSOLE_PATH, console_routes, is_console_path

__all__ = ["CONSOLE_PATH", "console_routes", "is_console_path"]
