"""``switchboard events RUN_ID``: a run's events from a gateway service, as NDJSON; ``--follow`` stays until it ends.

While following, a dropped connection is picked up again from the last seq printed, so
no event is shown twice and none is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from .client import GATEWAY_URL_HELP, CommandFailed, default_gateway_url, gateway_client, refused, unreachable

if TYPE_CHECKING:
    import httpx

_RECONNECTS = 3
_RECONNECT_PAUSE_S = 0.3


def add_events(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "events",
        help="print a run's events as NDJSON (--follow: live until the run ends)",
        description="Print the events of RUN_ID from a gateway service, one JSON object per line.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="as in the x-run-id header, or GET /runs")
    parser.add_argument("--gateway", default=None, metavar="URL", help=GATEWAY_URL_HELP)
    parser.add_argument(
        "--after-seq", type=int, default=-1, metavar="N", help="only events with seq > N (default: all)"
    )
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events until the run ends")
    parser.set_defaults(run=run_events)


def run_events(args: argparse.Namespace) -> int:
    url = args.gateway or default_gateway_url()
    try:
        _print_events(url, args.run_id, args.after_seq, args.follow)
    except CommandFailed as exc:
        print(f"switchboard events: {exc}", file=sys.stderr)
        return 1
    return 0


class _Cursor:
    """The last seq printed, kept across reconnects."""

    def __init__(self, after_seq: int) -> None:
        self.after_seq = after_seq


def _print_events(url: str, run_id: str, after_seq: int, follow: bool) -> None:
    import httpx

    cursor = _Cursor(after_seq)
    reconnects = 0
    with gateway_client(url) as client:
        while True:
            try:
                _stream(client, run_id, cursor, follow)
                return
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                reconnects += 1
                if not follow or reconnects > _RECONNECTS:
                    raise CommandFailed(f"the connection to {url} broke: {exc}") from None
                time.sleep(_RECONNECT_PAUSE_S)
            except httpx.TransportError as exc:
                raise unreachable(url, exc) from None


def _stream(client: httpx.Client, run_id: str, cursor: _Cursor, follow: bool) -> None:
    params = {"after_seq": str(cursor.after_seq), "follow": "1" if follow else "0"}
    with client.stream("GET", f"/runs/{quote(run_id, safe='')}/events", params=params) as response:
        if response.status_code != 200:
            raise refused(response)
        for line in response.iter_lines():
            if not line:
                continue
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            cursor.after_seq = int(orjson.loads(line).get("seq", cursor.after_seq))
