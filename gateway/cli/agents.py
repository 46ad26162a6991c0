"""``switchboard agents [list | add URL | remove NAME]``: the swarm's agents as a gateway service runs them now.

What the gateway runs can differ from its configuration file: agents registered or
removed through the API are kept in its registry and applied at every start. This command
shows and changes the running list through the API (``GET/POST /agents``,
``DELETE /agents/{name}``), so what it prints is what answers the next message. Adding
and removing needs an admin token on a gateway with tokens.
"""

from __future__ import annotations

import argparse
import os
from typing import Any
from urllib.parse import quote

from gateway.cli.client import UsageError, add_gateway_options, gateway_address, gateway_client, request_json


def add_agents(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agents",
        help="list, add (by URL) or remove the agents a gateway service runs",
        description="The agents a gateway service runs now (the file's and the API's), and registering or removing "
        "remote ones. Without an action: list.",
    )
    add_gateway_options(parser)
    parser.set_defaults(run=run_list)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    listing = actions.add_parser("list", help="every agent, the starting one marked (the default)")
    add_gateway_options(listing, action=True)
    listing.set_defaults(run=run_list)
    add = actions.add_parser("add", help="register the remote agent at URL (its card is fetched)")
    add_gateway_options(add, action=True)
    add.add_argument("url", metavar="URL", help="the agent's base URL, e.g. http://127.0.0.1:9101")
    add.add_argument("--name", default=None, help="the name in the swarm (default: the card's)")
    add.add_argument("--description", default=None, help="what the other agents read about it (default: the card's)")
    add.add_argument(
        "--handoff-from",
        action="append",
        default=None,
        metavar="AGENT",
        help="a local agent that may transfer to it (repeatable; default: the starting agent)",
    )
    add.add_argument("--max-cost-usd", type=float, default=None, metavar="USD", help="what one of its tasks may cost")
    add.add_argument(
        "--agent-token-env", default=None, metavar="NAME", help="the environment variable holding the agent's own token"
    )
    add.set_defaults(run=run_add)
    remove = actions.add_parser("remove", help="forget the remote agent NAME (in the registry too)")
    add_gateway_options(remove, action=True)
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(run=run_remove)


def agent_line(agent: dict[str, Any]) -> str:
    """One agent of ``GET /agents`` as a line: its name, where it runs, and what it does."""
    mark = " (starting)" if agent.get("starting") else ""
    where = f"remote {agent['url']}" if agent.get("kind") == "remote" else str(agent.get("kind"))
    return f"  {agent['name']}{mark}: {where}, {agent.get('description') or ''}".rstrip(", ")


def run_list(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        listing = request_json(client, address.url, "GET", "/agents")
    for agent in listing["agents"]:
        print(agent_line(agent))
    return 0


def run_add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"url": args.url}
    optional = {
        "name": args.name,
        "description": args.description,
        "handoff_from": args.handoff_from,
        "max_cost_usd": args.max_cost_usd,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    if args.agent_token_env is not None:
        token = os.environ.get(args.agent_token_env, "").strip()
        if not token:
            raise UsageError(f"--agent-token-env {args.agent_token_env}: the environment variable is not set")
        body["token"] = token
    address = gateway_address(args)
    with gateway_client(address) as client:
        agent = request_json(client, address.url, "POST", "/agents", body)
    print("registered " + agent_line(agent).strip())
    return 0


def run_remove(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        removed = request_json(client, address.url, "DELETE", f"/agents/{quote(args.name, safe='')}")
    print(f"removed {removed['removed']} ({removed['url']})")
    return 0
