"""``switchboard cancel RUN_ID``: end a run going on in a gateway service, and the agents' tasks it is waiting on.

The gateway sends every agent call in flight in the run its cancel, and records who asked
(``run_cancelled``); ``switchboard events RUN_ID`` shows how the run ended. A gateway with
tokens takes the caller's (``--token`` or ``$SWITCHBOARD_GATEWAY_TOKEN``): a run is its
owner's to cancel (or an admin's).
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

from gateway.cli.client import (
    GATEWAY_TOKEN_ENV,
    add_gateway_options,
    gateway_address,
    gateway_client,
    refused,
    unreachable,
)

_HELP = "cancel a run going on in a gateway service (a turn or a tool call), and its agents' tasks"
_DESCRIPTION = (
    "Cancel RUN_ID in a gateway service: every agent call in flight in it is sent its cancel. "
    f"On a gateway with tokens, the token is --token or ${GATEWAY_TOKEN_ENV}."
)


def add_cancel(subparsers: Any) -> None:
    parser = subparsers.add_parser("cancel", help=_HELP, description=_DESCRIPTION)
    parser.add_argument("run_id", metavar="RUN_ID", help="as in the x-run-id header, or GET /runs")
    add_gateway_options(parser)
    parser.set_defaults(run=run_cancel)


def run_cancel(args: argparse.Namespace) -> int:
    import httpx

    address = gateway_address(args)
    try:
        with gateway_client(address) as client:
            response = client.post(f"/runs/{quote(args.run_id, safe='')}/cancel")
    except httpx.TransportError as exc:
        raise unreachable(address.url, exc) from None
    if response.status_code != 202:
        raise refused(response)
    print(f"run {args.run_id} cancelled; `switchboard events {args.run_id}` shows how it ended")
    return 0


__all__ = ["GATEWAY_TOKEN_ENV", "add_cancel", "run_cancel"]
