"""``switchboard tools [list | add NAME AGENT | remove NAME]``: the agent tools a gateway service offers now.

As with ``switchboard agents``: the running list, the configuration file's and the API's
(``GET/POST /tools``, ``DELETE /tools/{name}``), changed for every replica and kept across
restarts by the gateway's registry. Adding and removing needs an admin token on a gateway
with tokens.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from gateway.cli.client import add_gateway_options, gateway_address, gateway_client, request_json


def add_tools(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tools",
        help="list, add or remove the agent tools a gateway service offers",
        description="The agent tools a gateway service offers now (the file's and the API's), and defining or "
        "removing them. Without an action: list.",
    )
    add_gateway_options(parser)
    parser.set_defaults(run=run_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="every agent tool and the agents using it (the default)")
    add_gateway_options(listing, action=True)
    listing.set_defaults(run=run_list)
    add = actions.add_parser("add", help="make the agent at AGENT (a URI) callable as tool NAME")
    add_gateway_options(add, action=True)
    add.add_argument("name", metavar="NAME", help="the tool's name, as models call it")
    add.add_argument("agent", metavar="AGENT", help="the agent's URI, e.g. http://127.0.0.1:9101")
    add.add_argument("--mode", choices=["sync", "streaming", "conversational"], default=None, help="default: sync")
    add.add_argument("--description", default=None, help="what models read about the tool (default: the card's)")
    add.add_argument(
        "--attach-to", action="append", default=None, metavar="AGENT", help="a local agent given the tool (repeatable)"
    )
    add.add_argument("--max-cost-usd", type=float, default=None, metavar="USD", help="what one call may cost")
    add.add_argument("--timeout-ms", type=int, default=None, metavar="MS", help="deadline of each request")
    add.set_defaults(run=run_add)
    remove = actions.add_parser("remove", help="remove tool NAME (in the registry too)")
    add_gateway_options(remove, action=True)
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(run=run_remove)


def tool_line(tool: dict[str, Any]) -> str:
    """One tool of ``GET /tools`` as a line: its name, the agent it calls, how, and who uses it."""
    users = f", used by {', '.join(tool['used_by'])}" if tool.get("used_by") else ""
    return f"  {tool['name']}: {tool['agent']} ({tool['mode']}){users}"


def run_list(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        listing = request_json(client, address.url, "GET", "/tools")
    for tool in listing["tools"]:
        print(tool_line(tool))
    return 0


def run_add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"name": args.name, "agent": args.agent}
    optional = {
        "mode": args.mode,
        "description": args.description,
        "attach_to": args.attach_to,
        "max_cost_usd": args.max_cost_usd,
        "timeout_ms": args.timeout_ms,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    address = gateway_address(args)
    with gateway_client(address) as client:
        tool = request_json(client, address.url, "POST", "/tools", body)
    print("added " + tool_line(tool).strip())
    return 0


def run_remove(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        removed = request_json(client, address.url, "DELETE", f"/tools/{quote(args.name, safe='')}")
    print(f"removed {removed['removed']}")
    return 0
