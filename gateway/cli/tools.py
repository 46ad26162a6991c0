"""``switchboard tools [list | add NAME AGENT | remove NAME]``: the agent tools a gateway service offers now.

As with ``switchboard agents``: the running list, the configuration file's and the API's
(``GET/POST /tools``, ``DELETE /tools/{name}``), changed for every replica and kept across
restarts by the gateway's registry. Adding and removing needs an admin token on a gateway
with tokens.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli.actions import Collection, add_collection, add_entry_options, added, given


def tool_line(tool: dict[str, Any]) -> str:
    """One tool of ``GET /tools`` as a line: its name, the agent it calls, how, and who uses it."""
    users = f", used by {', '.join(tool['used_by'])}" if tool.get("used_by") else ""
    return f"  {tool['name']}: {tool['agent']} ({tool['mode']}){users}"


TOOLS = Collection(
    "tools",
    "agent tool",
    tool_line,
    "list, add or remove the agent tools a gateway service offers",
    "make the agent at AGENT (a URI) callable as tool NAME",
    (("name", "the tool's name, as models call it"), ("agent", "the agent's URI, e.g. http://127.0.0.1:9101")),
)


def add_tools(subparsers: Any) -> None:
    add = add_collection(subparsers, TOOLS, run_add)
    add.add_argument("--mode", choices=["sync", "streaming", "conversational"], default=None, help="default: sync")
    add_entry_options(add, read_by="models", cost_of="one call")
    add.add_argument(
        "--attach-to", action="append", default=None, metavar="AGENT", help="a local agent given the tool (repeatable)"
    )
    add.add_argument("--timeout-ms", type=int, default=None, metavar="MS", help="deadline of each request")


def run_add(args: argparse.Namespace) -> int:
    fields = ("name", "agent", "mode", "description", "attach_to", "max_cost_usd", "timeout_ms")
    return added(args, TOOLS, given(args, *fields))
