"""What a ``run_failed`` event says: the error, or "cancelled" plus the canceller's reason."""

from __future__ import annotations

import anyio

_ANYIO_CANCEL_MESSAGE = "Cancelled via cancel scope "
_ANYIO_REASON_SEPARATOR = "; reason: "


def describe_failure(exc: BaseException) -> str:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        reason = cancel_reason(exc)
        return f"cancelled: {reason}" if reason else "cancelled"
    return str(exc) or type(exc).__name__


def cancel_reason(exc: BaseException) -> str | None:
    """The ``reason`` given to ``CancelScope.cancel(reason)`` (anyio >= 4.10), when it can be read.

    anyio offers no public accessor: it writes the reason into the cancellation's message as
    ``"Cancelled via cancel scope <id> by <task>; reason: <reason>"``. The run's cancel
    scope belongs to whoever runs the turn (the gateway service cancels its runs with
    "the gateway is shutting down"), so the message is the only channel that reaches the
    runner. This is the one place that reads that text; any other format gives None (the
    event then says just "cancelled"), and tests/test_swarm_robustness.py pins the format.
    """
    message = str(exc)
    if not message.startswith(_ANYIO_CANCEL_MESSAGE):
        return None
    _, separator, reason = message.partition(_ANYIO_REASON_SEPARATOR)
    return reason or None if separator else None
