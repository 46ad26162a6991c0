"""A run's events for the client that started it, as NDJSON; the run is cancelled if that client leaves and asked.

By default a run goes on when its client disconnects: the client (or another) reads it again
from ``GET /runs/{id}/events``. A client that has no use for the run without its stream asks
otherwise (``"cancel_on_disconnect": true``): when the stream is closed before the run's last
event, the run is cancelled as ``POST /runs/{id}/cancel`` would, its cause ``disconnect``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing

from agent_server.http.auth import Principal
from gateway.service.core import GatewayService
from gateway.service.errors import ServiceError

logger = logging.getLogger("gateway.service")


def followed(
    service: GatewayService, run_id: str, caller: Principal | None, *, cancel_on_disconnect: bool
) -> AsyncGenerator[bytes, None]:
    """The run's events until it ends; closed before, with ``cancel_on_disconnect``: the run is cancelled.

    Without ``cancel_on_disconnect`` these are the log's own lines, not a generator around them:
    an open stream holds one generator less while it waits (the response closes them either way).
    """
    lines = service.event_log.as_ndjson(run_id, follow=True)
    if not cancel_on_disconnect:
        return lines
    return _cancelled_on_disconnect(service, run_id, caller, lines)


async def _cancelled_on_disconnect(
    service: GatewayService, run_id: str, caller: Principal | None, lines: AsyncGenerator[bytes, None]
) -> AsyncGenerator[bytes, None]:
    """``lines``; the run cancelled when they are closed before its end."""
    ended = False
    try:
        async with aclosing(lines):
            async for line in lines:
                yield line
        ended = True
    finally:
        if not ended:
            try:
                await service.cancel_run(run_id, caller, cause="disconnect")
            except ServiceError as exc:  # it ended meanwhile: nothing left to cancel
                logger.info("run %s was not cancelled on its client's disconnect: %s", run_id, exc)
