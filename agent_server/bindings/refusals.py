"""How a refusal made before any binding read the request is answered: in the shape of the binding at its path.

A missing token or a refused browser origin is decided by middleware, for every route at
once. A client of the HTTP+JSON binding reads every error of it as a ``google.rpc.Status``
(rest.py), so under ``REST_PATH`` the refusal takes that shape; the JSON-RPC and NDJSON
routes, the card and the gateway's own API keep the shared error body, which their clients
read.
"""

from __future__ import annotations

from starlette.responses import Response

from agent_server.bindings import rest
from agent_server.http.auth import shared_refusal
from protocol import REST_PATH, ProtocolError


def refusal_at(path: str, error: ProtocolError, headers: dict[str, str] | None) -> Response:
    """``error`` as the binding at ``path`` answers errors (an ``auth.Refusal``)."""
    if path == REST_PATH or path.startswith(REST_PATH + "/"):
        return rest.error_response(error, headers=headers)
    return shared_refusal(path, error, headers)
