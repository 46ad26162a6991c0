"""``switchboard session SESSION_ID [show | move AGENT | reset]``: one session of a gateway service, by a person.

``move`` hands the session to AGENT for its next message, history kept
(``PUT /sessions/{id}/agent``, what ``chat``'s ``/agent`` does); ``reset`` forgets it
(``DELETE /sessions/{id}``): the next message starts a new conversation with the starting
agent. A session is its owner's (or an admin's) on a gateway with tokens.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from gateway.cli.client import add_gateway_options, gateway_address, gateway_client, request_json


def add_session(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "session",
        help="show a gateway session, move it to another agent, or reset it",
        description="Show SESSION_ID (its active agent and history length), hand it to AGENT for the next message "
        "(move), or forget it (reset). Without an action: show.",
    )
    add_gateway_options(parser)
    parser.add_argument("session_id", metavar="SESSION_ID")
    parser.set_defaults(run=run_show)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="its active agent and how many messages it holds (the default)")
    add_gateway_options(show, action=True)
    show.set_defaults(run=run_show)
    move = actions.add_parser("move", help="AGENT takes the next message; the history stays")
    add_gateway_options(move, action=True)
    move.add_argument("agent", metavar="AGENT")
    move.set_defaults(run=run_move)
    reset = actions.add_parser("reset", help="forget the session: the next message starts anew")
    add_gateway_options(reset, action=True)
    reset.set_defaults(run=run_reset)


def _path(args: argparse.Namespace) -> str:
    return f"/sessions/{quote(args.session_id, safe='')}"


def run_show(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        session = request_json(client, address.url, "GET", _path(args))
    messages = session.get("history") or []
    print(f"session {args.session_id}: {session.get('active_agent')} answers next; {len(messages)} messages")
    return 0


def run_move(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        answer = request_json(client, address.url, "PUT", _path(args) + "/agent", {"agent": args.agent})
    print(f"session {args.session_id}: {answer['active_agent']} takes the next message")
    return 0


def run_reset(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    with gateway_client(address) as client:
        request_json(client, address.url, "DELETE", _path(args))
    print(f"session {args.session_id} reset: the next message starts a new conversation with the starting agent")
    return 0
