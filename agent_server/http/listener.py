"""The listening socket a server accepts on: while the process is out of descriptors, accepting pauses, said once.

asyncio's own loop, when ``accept()`` fails for want of descriptors, reports the error (a
traceback in the log), stops watching the socket and retries a second later; but it goes on
through the rest of its accept batch, as long as the listen backlog, and does the same for
each attempt: one failure became thousands of tracebacks and of pending retries per second,
which kept the process too busy and its log growing, while no connection closed to free a
descriptor.

``PausingListener`` lets that failure through once per batch (the rest of the batch reads as
an empty backlog), so one retry is pending at a time; the loop's report of it is dropped
(``_QuietPauses``, around the loop's exception handler) and the listener says instead, once per
pause, that it paused and, when a connection is accepted again, that it resumed. Meanwhile new
connections wait in the kernel's backlog and the connections held are cut on their own timeouts,
which frees descriptors. Under uvloop, libuv accepts and this object's ``accept`` is not called.
"""

from __future__ import annotations

import asyncio
import enum
import errno
import logging
import socket
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""The errors of ``accept()`` that asyncio answers by pausing: the process or the system is out of resources."""


class _Accepting(enum.Enum):
    ACCEPTING = "accepting"
    ENDING_BATCH = "ending the batch that hit the limit"
    PAUSED = "paused until the loop's retry"


class _AcceptPaused(OSError):
    """The resource error of one accept batch, marked so that the loop's report of it can be told apart and dropped."""


class PausingListener(socket.socket):
    """A listening socket whose ``accept`` pauses accepting while resources are exhausted (see the module)."""

    __slots__ = ("_state",)

    def __init__(self, family: int, type: int, proto: int, fileno: int) -> None:
        super().__init__(family, type, proto, fileno)
        self._state = _Accepting.ACCEPTING

    @classmethod
    def taking_over(cls, sock: socket.socket) -> PausingListener:
        """The listener on ``sock``'s descriptor; ``sock`` is detached (the server closes its listener as it stops)."""
        return cls(sock.family, sock.type, sock.proto, sock.detach())

    def accept(self) -> tuple[socket.socket, Any]:
        if self._state is _Accepting.ENDING_BATCH:
            raise BlockingIOError(errno.EAGAIN, "accepting is paused")
        try:
            accepted = super().accept()
        except OSError as exc:
            if exc.errno not in _EXHAUSTED:
                raise
            self._pause(exc)
            raise _AcceptPaused(exc.errno, exc.strerror) from exc
        if self._state is _Accepting.PAUSED:
            logger.info("accepting connections again")
            self._state = _Accepting.ACCEPTING
        return accepted

    def _pause(self, exc: OSError) -> None:
        loop = asyncio.get_running_loop()
        if not isinstance(loop.get_exception_handler(), _QuietPauses):
            loop.set_exception_handler(_QuietPauses(loop.get_exception_handler()))
        if self._state is _Accepting.ACCEPTING:
            logger.warning(
                "accepting paused: %s; new connections wait in the listen backlog until held ones close "
                "or time out. If it is the open-file limit, raise it (ulimit -n, LimitNOFILE= in systemd) "
                "or lower max_connections",
                exc.strerror,
            )
        self._state = _Accepting.ENDING_BATCH
        loop.call_soon(self._batch_ended)

    def _batch_ended(self) -> None:
        self._state = _Accepting.PAUSED


_Handler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None
"""A loop's exception handler; None is the loop's default."""


class _QuietPauses:
    """The loop's exception handler, but silent about ``_AcceptPaused``: its listener has said it already."""

    def __init__(self, previous: _Handler) -> None:
        self.previous = previous

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), _AcceptPaused):
            return
        if self.previous is None:
            loop.default_exception_handler(context)
        else:
            self.previous(loop, context)
