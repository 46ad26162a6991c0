"""What the commands share: errors a person can act on (``UsageError``, ``CommandFailed``) and the gateway's URL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from protocol.errors import SwitchboardError

if TYPE_CHECKING:
    import httpx

GATEWAY_URL_ENV = "SWITCHBOARD_GATEWAY_URL"
DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080"
GATEWAY_URL_HELP = f"the gateway service (default: ${GATEWAY_URL_ENV} or {DEFAULT_GATEWAY_URL})"


class UsageError(SwitchboardError):
    """A mistake in what the user typed; printed without a traceback, exit code 2."""


class CommandFailed(SwitchboardError):
    """The command ran but did not succeed; printed as one line on stderr, exit code 1."""


class GatewayRefused(CommandFailed):
    """The gateway answered one request with an error; the next request may still succeed."""


def default_gateway_url() -> str:
    return os.environ.get(GATEWAY_URL_ENV) or DEFAULT_GATEWAY_URL


def gateway_client(url: str) -> httpx.Client:
    """No read timeout: a followed run may stay quiet for a long time."""
    import httpx

    return httpx.Client(base_url=url.rstrip("/"), timeout=httpx.Timeout(10.0, read=None))


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
    return GatewayRefused(f"the gateway answered {response.status_code}: {message}")
