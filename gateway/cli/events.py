"""``switchboard events RUN_ID | --session ID | --all``: runs' events from a gateway service; ``--follow`` live.

One run: its events, and with ``--follow`` until it ends; a dropped connection is picked
up again from the last seq printed, so no event is shown twice and none is missed. A
session's runs or all runs (follow_runs.py): with ``--follow``, the runs going on now and
every later one, until Ctrl-C. On a terminal the events are rendered for a person
(run_view.py); piped, or with ``--ndjson``, they are NDJSON, one object per line.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from gateway.cli.client import (
    CommandFailed,
    GatewayAddress,
    add_gateway_options,
    gateway_address,
    gateway_client,
    refused,
    unreachable,
)

if TYPE_CHECKING:
    import httpx

_RECONNECTS = 3
_RECONNECT_PAUSE_S = 0.3


def add_events(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "events",
        help="print runs' events (--follow: live); readable on a terminal, NDJSON when piped",
        description=(
            "Print the events of RUN_ID, of a session's runs (--session) or of every run (--all) from a gateway "
            "service: rendered for a person on a terminal, one JSON object per line when piped (or --ndjson)."
        ),
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("run_id", nargs="?", metavar="RUN_ID", help="as in the x-run-id header, or GET /runs")
    which.add_argument("--session", metavar="ID", help="the session's runs (with --follow: its current and next ones)")
    which.add_argument("--all", action="store_true", help="every run (with --follow: those going on and every new one)")
    add_gateway_options(parser)
    parser.add_argument(
        "--after-seq", type=int, default=-1, metavar="N", help="only events with seq > N (default: all)"
    )
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events (see above)")
    parser.add_argument("--ndjson", action="store_true", help="NDJSON even on a terminal")
    parser.set_defaults(run=run_events)


def run_events(args: argparse.Namespace) -> int:
    address = gateway_address(args)
    show = _printer(readable=sys.stdout.isatty() and not args.ndjson, label=bool(args.all))
    try:
        if args.run_id is not None:
            _print_events(address, args.run_id, args.after_seq, args.follow, show)
        else:
            import anyio

            from gateway.cli.follow_runs import show_runs

            session = args.session

            def matches(run: dict[str, Any]) -> bool:
                return session is None or run.get("session_id") == session

            anyio.run(
                functools.partial(show_runs, address, matches, show, follow=args.follow, in_order=session is not None)
            )
    except CommandFailed as exc:
        print(f"switchboard events: {exc}", file=sys.stderr)
        return 1
    return 0


def _printer(*, readable: bool, label: bool) -> Callable[[bytes], None]:
    """Each event line as it comes: rendered (run_view.py), or as the line itself."""
    if readable:
        from gateway.cli.run_view import RunView

        view = RunView(sys.stdout, label=label)
        return lambda line: view.show(orjson.loads(line))

    def raw(line: bytes) -> None:
        sys.stdout.write(line.decode() + "\n")
        sys.stdout.flush()

    return raw


class _Cursor:
    """The last seq printed, kept across reconnects."""

    def __init__(self, after_seq: int) -> None:
        self.after_seq = after_seq


def _print_events(
    address: GatewayAddress, run_id: str, after_seq: int, follow: bool, show: Callable[[bytes], None]
) -> None:
    import httpx

    url = address.url
    cursor = _Cursor(after_seq)
    reconnects = 0
    with gateway_client(address) as client:
        while True:
            try:
                _stream(client, run_id, cursor, follow, show)
                return
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                reconnects += 1
                if not follow or reconnects > _RECONNECTS:
                    raise CommandFailed(f"the connection to {url} broke: {exc}") from None
                time.sleep(_RECONNECT_PAUSE_S)
            except httpx.TransportError as exc:
                raise unreachable(url, exc) from None


def _stream(client: httpx.Client, run_id: str, cursor: _Cursor, follow: bool, show: Callable[[bytes], None]) -> None:
    params = {"after_seq": str(cursor.after_seq), "follow": "1" if follow else "0"}
    with client.stream("GET", f"/runs/{quote(run_id, safe='')}/events", params=params) as response:
        if response.status_code != 200:
            raise refused(response)
        for line in response.iter_lines():
            if not line:
                continue
            show(line.encode())
            cursor.after_seq = int(orjson.loads(line).get("seq", cursor.after_seq))
