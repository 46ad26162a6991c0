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

from gateway.cli.actions import Collection, add_collection, add_entry_options, added, given
from gateway.cli.client import UsageError


def agent_line(agent: dict[str, Any]) -> str:
    """One agent of ``GET /agents`` as a line: its name, where it runs, and what it does."""
    mark = " (starting)" if agent.get("starting") else ""
    where = f"remote {agent['url']}" if agent.get("kind") == "remote" else str(agent.get("kind"))
    return f"  {agent['name']}{mark}: {where}, {agent.get('description') or ''}".rstrip(", ")


AGENTS = Collection(
    "agents",
    "agent",
    agent_line,
    "list, add (by URL) or remove the agents a gateway service runs",
    "register the remote agent at URL (its card is fetched)",
    (("url", "the agent's base URL, e.g. http://127.0.0.1:9101"),),
)


def add_agents(subparsers: Any) -> None:
    add = add_collection(subparsers, AGENTS, run_add)
    add.add_argument("--name", default=None, help="the name in the swarm (default: the card's)")
    add_entry_options(add, read_by="the other agents", cost_of="one of its tasks")
    add.add_argument(
        "--handoff-from",
        action="append",
        default=None,
        metavar="AGENT",
        help="a local agent that may transfer to it (repeatable; default: the starting agent)",
    )
    add.add_argument(
        "--agent-token-env", default=None, metavar="NAME", help="the environment variable holding the agent's own token"
    )


def run_add(args: argparse.Namespace) -> int:
    body = given(args, "url", "name", "description", "handoff_from", "max_cost_usd")
    if args.agent_token_env is not None:
        token = os.environ.get(args.agent_token_env, "").strip()
        if not token:
            raise UsageError(f"--agent-token-env {args.agent_token_env}: the environment variable is not set")
        body["token"] = token
    return added(args, AGENTS, body)
