"""How the server commands start: the port bound first, uvicorn's start-up noise kept out, one line on failure.

``switchboard serve`` and ``switchboard gateway`` fail to start the same way: one line on
stderr, ``switchboard COMMAND: could not start: WHY``, and exit code 1 (``CommandFailed``).
The port is bound before anything else starts, so a port in use is said at once (not after
the gateway has connected its agents), and a lifespan that fails (a remote agent that
cannot be reached) is said once, by the command, not also as a traceback by uvicorn.
"""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from gateway.cli.client import CommandFailed

_UVICORN_ERRORS = "uvicorn.error"
_NOISE = ("Traceback (most recent call last)", "Exception in 'lifespan' protocol", "Application startup failed")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` for uvicorn (``server.run(sockets=[...])``); CommandFailed when taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        in_use = exc.errno == errno.EADDRINUSE
        why = "is in use (another server?); pick another with --port" if in_use else f"cannot be bound: {exc}"
        raise CommandFailed(f"could not start: {host}:{port} {why}") from None
    listener.set_inheritable(True)
    return listener


class _StartupNoise(logging.Filter):
    """Drops uvicorn's report of a failed lifespan (a traceback and a farewell): the command says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_NOISE)


@contextmanager
def quiet_startup() -> Iterator[None]:
    """While the server runs: uvicorn's start-up failure lines are left out (the command reports the failure)."""
    noise = _StartupNoise()
    logger = logging.getLogger(_UVICORN_ERRORS)
    logger.addFilter(noise)
    try:
        yield
    finally:
        logger.removeFilter(noise)
