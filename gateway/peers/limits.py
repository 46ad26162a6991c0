"""How the gateway calls peers: its deadlines, its connection pool and its size limits, in one place.

Every default here is the one the Python API, the configuration (``[peers]``) and the
documentation use. A ``PeerLimits`` is handed to the ``Gateway``, which hands it to each peer.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class PeerLimits:
    """Deadlines, pool and sizes of the calls the gateway makes to agents.

    - ``connect_timeout_s``: open a connection (or start an MCP server);
    - ``headers_timeout_s``: a stream's response headers, counted from the moment the request
      is written on a connection (waiting for a pooled connection is not counted);
    - ``cancel_timeout_s``: the best-effort ``tasks/cancel`` after a call was ended;
    - ``max_connections``: the HTTP connection pool, shared by every agent; a request that
      finds all of them busy waits up to ``pool_timeout_s``, then fails ``pool_exhausted``;
    - ``keepalive_s``: how long an idle pooled connection is kept; below the keep-alive of the
      servers called (uvicorn's, the agent server's and Node's are 5 s), so the gateway closes
      an idle connection before the server does and rarely writes on one the server closed;
    - ``max_line_bytes``: one stream line; ``max_stream_bytes``: all lines of one streamed
      answer together; ``max_answer_bytes``: one JSON answer (a Task); ``max_card_bytes``: an
      agent card;
    - ``max_resubscribes``: how many times one call's stream, cut before its final line, is
      picked up again by a resubscribe (``/tasks/resubscribe`` after the last seq,
      ``SubscribeToTask``); 0: never.
    """

    connect_timeout_s: float = 5.0
    headers_timeout_s: float = 10.0
    cancel_timeout_s: float = 2.0
    max_connections: int = 1024
    pool_timeout_s: float = 30.0
    keepalive_s: float = 4.0
    max_line_bytes: int = 1 * MiB
    max_stream_bytes: int = 16 * MiB
    max_answer_bytes: int = 16 * MiB
    max_card_bytes: int = 256 * 1024
    max_resubscribes: int = 3

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            counts_from_zero = name == "max_resubscribes"
            number = not isinstance(value, bool) and isinstance(value, int | float)
            if not number or value < 0 or (value == 0 and not counts_from_zero):
                what = "a number >= 0" if counts_from_zero else "a positive number"
                raise ValueError(f"PeerLimits.{name} must be {what}, got {value!r}")
