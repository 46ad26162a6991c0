"""What the commands share: errors a person can act on (``UsageError``, ``CommandFailed``), the gateway's URL and token.

Every command that talks to a gateway takes ``--gateway URL`` and ``--token TOKEN``, with
``$SWITCHBOARD_GATEWAY_URL`` and ``$SWITCHBOARD_GATEWAY_TOKEN`` as their defaults, so a
gateway behind tokens is reached the same way by all of them; a 401 or 403 answer says
which of the two to set.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from protocol.errors import SwitchboardError

if TYPE_CHECKING:
    import httpx

GATEWAY_URL_ENV = "SWITCHBOARD_GATEWAY_URL"
DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080"
GATEWAY_URL_HELP = f"the gateway service (default: ${GATEWAY_URL_ENV} or {DEFAULT_GATEWAY_URL})"
GATEWAY_TOKEN_ENV = "SWITCHBOARD_GATEWAY_TOKEN"
TOKEN_HELP = f"the bearer token a gateway with tokens asks for (default: ${GATEWAY_TOKEN_ENV})"
_NEEDS_TOKEN = {
    401: f"this needs a token: pass --token TOKEN or set {GATEWAY_TOKEN_ENV}",
    403: f"this needs a token with more rights: pass another one with --token TOKEN or {GATEWAY_TOKEN_ENV}",
}


class UsageError(SwitchboardError):
    """A mistake in what the user typed; printed without a traceback, exit code 2."""


class CommandFailed(SwitchboardError):
    """The command ran but did not succeed; printed as one line on stderr, exit code 1."""


class GatewayRefused(CommandFailed):
    """The gateway answered one request with an error; the next request may still succeed."""


def default_gateway_url() -> str:
    return os.environ.get(GATEWAY_URL_ENV) or DEFAULT_GATEWAY_URL


def default_token() -> str | None:
    return os.environ.get(GATEWAY_TOKEN_ENV, "").strip() or None


@dataclass(frozen=True)
class GatewayAddress:
    """Where the gateway is and the token to show it (None: send none)."""

    url: str
    token: str | None = field(default=None, repr=False)

    @property
    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}


def add_gateway_options(parser: argparse.ArgumentParser, *, action: bool = False) -> None:
    """``--gateway URL`` and ``--token TOKEN``, read back with ``gateway_address``.

    ``action``: the parser of a command's action (``agents add``), where the options may
    come again; left out there, they keep what was given before the action.
    """
    default = argparse.SUPPRESS if action else None
    parser.add_argument("--gateway", default=default, metavar="URL", help=GATEWAY_URL_HELP)
    parser.add_argument("--token", default=default, metavar="TOKEN", help=TOKEN_HELP)


def gateway_address(args: argparse.Namespace) -> GatewayAddress:
    """The options of ``add_gateway_options``, or their environment variables, or the default URL."""
    return GatewayAddress(args.gateway or default_gateway_url(), (args.token or "").strip() or default_token())


def gateway_client(url: str | GatewayAddress) -> httpx.Client:
    """No read timeout: a followed run may stay quiet for a long time."""
    import httpx

    address = url if isinstance(url, GatewayAddress) else GatewayAddress(url)
    return httpx.Client(
        base_url=address.url.rstrip("/"), headers=address.headers, timeout=httpx.Timeout(10.0, read=None)
    )


def unreachable(url: str, exc: httpx.TransportError) -> CommandFailed:
    return CommandFailed(
        f"cannot reach the gateway at {url} ({exc}); start one with `switchboard gateway` or pass --gateway URL"
    )


def refused(response: httpx.Response) -> GatewayRefused:
    """The gateway's own error message when it sent one, else the status line."""
    import orjson

    response.read()
    try:
        message = orjson.loads(response.content)["error"]["message"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        message = response.text.strip() or response.reason_phrase
    hint = token_hint(response.status_code)
    return GatewayRefused(f"the gateway answered {response.status_code}: {message}" + (f" ({hint})" if hint else ""))


def token_hint(status: int) -> str | None:
    """What to set when an answer with ``status`` asks for a (better) token; None for any other status."""
    return _NEEDS_TOKEN.get(status)


def request_json(
    client: httpx.Client, url: str, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One request whose answer is a JSON object: the object, or GatewayRefused / CommandFailed saying why not."""
    import httpx

    try:
        response = client.request(method, path, json=body)
    except httpx.TransportError as exc:
        raise unreachable(url, exc) from None
    if response.status_code not in (200, 201):
        raise refused(response)
    answer: dict[str, Any] = response.json()
    return answer
