"""The URL a server names itself by when no public URL is configured: the address the connection reached.

Never the request's ``Host`` header: whoever sends the request writes it, and a card (or a
redirect) built from it would send the next caller, or a cache, wherever that was
(``Host: evil.example``). The socket's own address is the server's to know; behind a proxy
or a name, the operator says the public URL.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection

_DEFAULT_PORTS = {"http": 80, "https": 443}


def own_url(connection: HTTPConnection) -> str:
    """``scheme://host:port`` of the socket the request came in on, and the app's root path."""
    scope = connection.scope
    scheme = scope.get("scheme", "http")
    host, port = scope.get("server") or ("127.0.0.1", _DEFAULT_PORTS.get(scheme, 80))
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    root = scope.get("app_root_path", scope.get("root_path", ""))
    return f"{scheme}://{netloc}{root}".rstrip("/")
