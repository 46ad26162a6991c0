"""What the commands that manage a gateway (``agents``, ``tools``, ``session``) share: actions and one request each.

Each is ``switchboard COMMAND [ACTION] ...``, an action being a sub-parser with its own
``run``; without an action the command does its default one. Every action is one request
to the gateway's API with the token of ``--token`` or ``$SWITCHBOARD_GATEWAY_TOKEN``.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gateway.cli.client import add_gateway_options, gateway_address, gateway_client, request_json

Run = Callable[[argparse.Namespace], int]


def add_command(
    subparsers: Any, name: str, summary: str, description: str, default: Run, *, operand: str | None = None
) -> Any:
    """The command ``name`` and its actions (argparse's private sub-parsers object, returned).

    ``default`` runs when no action is named; ``operand``: a positional argument the command
    takes before its action (``session SESSION_ID move ...``).
    """
    parser = subparsers.add_parser(name, help=summary, description=description)
    if operand is not None:
        parser.add_argument(operand, metavar=operand.upper())
    add_gateway_options(parser)
    parser.set_defaults(run=default)
    return parser.add_subparsers(dest="action", metavar="ACTION")


def add_action(actions: Any, name: str, help: str, run: Run) -> argparse.ArgumentParser:
    """One action, taking ``--gateway`` and ``--token`` after its name too."""
    parser: argparse.ArgumentParser = actions.add_parser(name, help=help)
    add_gateway_options(parser, action=True)
    parser.set_defaults(run=run)
    return parser


@dataclass(frozen=True)
class Collection:
    """A list of the gateway's API that a command manages (``/agents``, ``/tools``): list, add, remove."""

    command: str
    """Also the path under the API: ``agents``, ``/agents``."""
    kind: str
    line: Callable[[dict[str, Any]], str]
    """One listed entry as a line."""
    summary: str
    add_help: str
    operands: tuple[tuple[str, str], ...]
    """What ``add`` takes before its options: (name, help) each."""

    @property
    def path(self) -> str:
        return "/" + self.command

    @property
    def description(self) -> str:
        return f"The {self.kind}s a gateway service runs now (the file's and the API's); adding and removing them."


def add_collection(subparsers: Any, collection: Collection, run_add: Run) -> argparse.ArgumentParser:
    """The command with ``list`` (the default), ``remove NAME`` and ``add OPERANDS``, whose parser is returned.

    The caller adds the options of ``add`` to it.
    """
    listing = functools.partial(_list, collection)
    actions = add_command(subparsers, collection.command, collection.summary, collection.description, listing)
    add_action(actions, "list", f"every {collection.kind}, as it runs now (the default)", listing)
    remove = add_action(
        actions,
        "remove",
        f"remove the {collection.kind} NAME (in the registry too)",
        functools.partial(_remove, collection),
    )
    remove.add_argument("name", metavar="NAME")
    add = add_action(actions, "add", collection.add_help, run_add)
    for name, help in collection.operands:
        add.add_argument(name, metavar=name.upper(), help=help)
    return add


def _list(collection: Collection, args: argparse.Namespace) -> int:
    (items,) = (value for value in ask(args, "GET", collection.path).values() if isinstance(value, list))
    for item in items:
        print(collection.line(item))
    if not items:  # say so: an empty answer reads as a command that did nothing
        print(f"no {collection.path.strip('/')} on this gateway")
    return 0


def _remove(collection: Collection, args: argparse.Namespace) -> int:
    removed = ask(args, "DELETE", f"{collection.path}/{quote(args.name, safe='')}")
    print(f"removed {removed['removed']}" + (f" ({removed['url']})" if removed.get("url") else ""))
    return 0


def added(args: argparse.Namespace, collection: Collection, body: dict[str, Any]) -> int:
    """``POST`` the new entry, and print it as listed."""
    print("added " + collection.line(ask(args, "POST", collection.path, body)).strip())
    return 0


def add_entry_options(parser: argparse.ArgumentParser, *, read_by: str, cost_of: str) -> None:
    """``--description`` and ``--max-cost-usd``, which an agent and a tool are both registered with."""
    parser.add_argument("--description", default=None, help=f"what {read_by} read about it (default: the card's)")
    parser.add_argument("--max-cost-usd", type=float, default=None, metavar="USD", help=f"what {cost_of} may cost")


def ask(args: argparse.Namespace, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """The gateway's JSON answer to one request, or GatewayRefused / CommandFailed saying why not."""
    address = gateway_address(args)
    with gateway_client(address) as client:
        return request_json(client, address.url, method, path, body)


def given(args: argparse.Namespace, *fields: str) -> dict[str, Any]:
    """The body of ``fields`` the user gave (an option left out is not sent: the gateway's default applies)."""
    return {field: getattr(args, field) for field in fields if getattr(args, field) is not None}
