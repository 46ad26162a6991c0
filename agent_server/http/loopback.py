"""A free TCP port on 127.0.0.1, for a server started by the caller (the demo, tests, benchmarks).

Closing a socket picked with port 0 would leave a race: until the server binds, the kernel
may hand the same port to anyone else asking for port 0 (a parallel test, a client's
ephemeral port). So the port is left in TIME_WAIT by one local connection: for a minute the
kernel gives it to no one asking for any port, while a ``SO_REUSEADDR`` listener (uvicorn,
Redis, this package's servers) may take it.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 kept free for a server that binds it with ``SO_REUSEADDR``."""
    with socket.socket() as listener, socket.socket() as client:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        client.connect(listener.getsockname())
        accepted, _ = listener.accept()
        accepted.close()  # the side that closes first keeps the TIME_WAIT, on the listener's port
        return int(listener.getsockname()[1])
