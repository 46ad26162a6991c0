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

from gateway.cli.actions import add_action, add_command, ask

_SUMMARY = "show a gateway session, move it to another agent, or reset it"
_DESCRIPTION = (
    "Show SESSION_ID (its active agent and history length), hand it to AGENT for the next message "
    "(move), or forget it (reset). Without an action: show."
)


def add_session(subparsers: Any) -> None:
    actions = add_command(subparsers, "session", _SUMMARY, _DESCRIPTION, run_show, operand="session_id")
    add_action(actions, "show", "its active agent and how many messages it holds (the default)", run_show)
    move = add_action(actions, "move", "AGENT takes the next message; the history stays", run_move)
    move.add_argument("agent", metavar="AGENT")
    add_action(actions, "reset", "forget the session: the next message starts anew", run_reset)


def _path(args: argparse.Namespace) -> str:
    return f"/sessions/{quote(args.session_id, safe='')}"


def run_show(args: argparse.Namespace) -> int:
    session = ask(args, "GET", _path(args))
    messages = session.get("history") or []
    print(f"session {args.session_id}: {session.get('active_agent')} answers next; {len(messages)} messages")
    return 0


def run_move(args: argparse.Namespace) -> int:
    answer = ask(args, "PUT", _path(args) + "/agent", {"agent": args.agent})
    print(f"session {args.session_id}: {answer['active_agent']} takes the next message")
    return 0


def run_reset(args: argparse.Namespace) -> int:
    ask(args, "DELETE", _path(args))
    print(f"session {args.session_id} reset: the next message starts a new conversation with the starting agent")
    return 0
