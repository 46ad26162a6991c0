"""The ``switchboard`` command: it only registers the subcommands and runs the one asked for.

Each subcommand is a module of ``gateway/cli/`` (``serve``, ``gateway``, ``call``, ``chat``,
``events``, ``cancel``, ``agents``, ``tools``, ``session``) with an ``add_<name>(subparsers)`` function that
adds its parser and sets ``run`` (a function of the parsed arguments returning the exit code)
with ``set_defaults``; a new command is one such module plus its entry in ``COMMANDS``.
A command raises ``UsageError`` (``cli/client.py``) for a mistake in what the user
typed: it is printed without a traceback and the exit code is 2. ``CommandFailed`` (the
command ran and could not do it: a server that cannot start, a call that failed) is one line
too, with exit code 1, for every command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gateway.cli.agents import add_agents
from gateway.cli.call import add_call
from gateway.cli.cancel import add_cancel
from gateway.cli.chat import add_chat
from gateway.cli.client import CommandFailed, UsageError
from gateway.cli.events import add_events
from gateway.cli.gateway import add_gateway
from gateway.cli.serve import add_serve
from gateway.cli.session import add_session
from gateway.cli.tools import add_tools

Subparsers = Any  # argparse's _SubParsersAction, which is private
Command = Callable[[Subparsers], None]

COMMANDS: list[Command] = [
    add_serve,
    add_gateway,
    add_call,
    add_chat,
    add_events,
    add_cancel,
    add_agents,
    add_tools,
    add_session,
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run(args)
    except UsageError as exc:
        print(f"switchboard {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except CommandFailed as exc:
        print(f"switchboard {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="switchboard", description="Run AI agents as network services.")
    parser.add_argument("--version", action="version", version=f"switchboard {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def _version() -> str:
    """The installed distribution's version (pyproject.toml), or ``unknown`` when run from an uninstalled tree."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("a2a-switchboard")
    except PackageNotFoundError:
        return "unknown"


__all__ = ["COMMANDS", "CommandFailed", "UsageError", "main"]
