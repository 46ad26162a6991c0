"""What one server lets a connection hold: the defaults of its read timeouts, connection cap and drain.

Kept apart from the server (server.py) so that reading a default (the CLI's help does)
loads nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ServerLimits:
    """What one server lets a connection hold; every default here, nowhere else.

    header_timeout_s: from a connection's accept until its first request's headers are
        complete; on keep-alive, from the end of each response until the next request's
        headers are complete, however late its first byte (never less than
        ``keep_alive_timeout_s``, so an idle connection is the keep-alive timeout's to
        close). Past it: a 408 if part of a request came, then close.
    body_timeout_s: from a request's headers until its whole body has arrived, in total,
        so a body dripped a byte at a time cannot hold the connection. Past it: a 408 if no
        response started yet, then close.
    max_connections: connections held at once; one more gets at once a 503 with
        ``Retry-After: 1`` and is closed. The open-file limit is raised to fit it, and the
        listen backlog too (``listen_backlog``).
    keep_alive_timeout_s: how long an idle keep-alive connection waits for its next
        request (uvicorn's ``timeout_keep_alive``).
    max_drain_bytes: how much of a body an endpoint did not read is read and dropped after
        its answer, so a client that sends everything before reading hears it; past it the
        connection is closed once the answer is out.
    linger_s: after a 503 or 408, how long the server keeps reading and dropping what the
        client still sends (it closes sooner when the client does), so the close does not
        reset the connection before the client has read the answer.
    """

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 2048
    keep_alive_timeout_s: float = 5.0
    max_drain_bytes: int = 64 * 1024 * 1024
    linger_s: float = 2.0

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "keep_alive_timeout_s", "linger_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"ServerLimits.{name} must be a positive number of seconds, got {value!r}")
        if self.max_connections < 1:
            raise ValueError(f"ServerLimits.max_connections must be at least 1, got {self.max_connections!r}")
        if self.max_drain_bytes < 0:
            raise ValueError(f"ServerLimits.max_drain_bytes must be 0 or more, got {self.max_drain_bytes!r}")


MIN_LISTEN_BACKLOG = 2048
"""The least listen backlog a server asks for (uvicorn's default)."""


def listen_backlog(limits: ServerLimits) -> int:
    """How many connections the kernel may queue before the server accepts them: as many as it may hold.

    A burst of clients connecting at once beyond the backlog has its connection attempts
    dropped by the kernel, and each retries a second or more later; a server that holds
    ``max_connections`` at once can be asked for that many in one burst. The kernel caps the
    value at ``net.core.somaxconn``.
    """
    return max(MIN_LISTEN_BACKLOG, limits.max_connections)


CARD_MAX_AGE_S = 60
"""How long a client may keep the agent card without asking again (``Cache-Control: max-age``); it also
gets an ``ETag`` to revalidate with. Short, because a gateway's card changes as agents register."""
