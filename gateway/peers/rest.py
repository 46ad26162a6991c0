"""A standard A2A agent over the HTTP+JSON (REST) binding, v1.0, through the same HTTP client as every peer.

Each operation is the HTTP method and path the specification gives, under the card's
HTTP+JSON interface URL, with ``A2A-Version: 1.0``: ``POST /message:send``, ``POST
/message:stream`` (Server-Sent Events, each ``data:`` one StreamResponse), ``POST
/tasks/{id}:subscribe`` (the specification's text and the a2a-sdk's verb), ``GET
/tasks/{id}``, ``POST /tasks/{id}:cancel``. The operations, their resumes and folds are
every standard peer's (standard.py), the requests and SSE streams what the ones over HTTP
share (sse.py).

An error is an HTTP status with a ``google.rpc.Status`` body: a ``PeerHTTPError`` whose
``code`` is the A2A code its ErrorInfo names (``TASK_NOT_FOUND`` -> -32001), so a finished
task refusing a subscribe reads as it does over JSON-RPC. A stream's ``error`` event is
one too.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson

from gateway.errors import AgentToolError, PeerHTTPError
from gateway.peers.http_client import PeerHttpClient
from gateway.peers.limits import PeerLimits
from gateway.peers.sse import Outgoing, SsePeer
from protocol import A2A_V1, AgentCard, SSEEvent
from protocol.a2a import VERSION_HEADER
from protocol.a2a.errors import error_of_status
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE

MEDIA_TYPE = "application/a2a+json"


class RestPeer(SsePeer):
    """The agent at ``url`` (its card's HTTP+JSON interface, on the host it was registered at)."""

    binding = f"http+json-{A2A_V1}"

    def __init__(
        self,
        uri: str,
        url: str,
        card: AgentCard,
        client: PeerHttpClient,
        limits: PeerLimits,
        *,
        token: str | None = None,
    ) -> None:
        headers = {"content-type": MEDIA_TYPE, "accept": f"{MEDIA_TYPE}, application/json", VERSION_HEADER: A2A_V1}
        stream_headers = {**headers, "accept": SSE_MEDIA_TYPE}
        super().__init__(
            uri, url.rstrip("/"), client, limits, headers=headers, stream_headers=stream_headers, token=token
        )
        self.version = A2A_V1
        self._card = card

    def _request(self, operation: str, params: dict[str, Any]) -> Outgoing:
        if operation in ("send", "stream"):
            path = "/message:send" if operation == "send" else "/message:stream"
            return Outgoing("POST", path, orjson.dumps(params), "POST " + path)
        task = "/tasks/" + quote(str(params["id"]), safe="")
        if operation == "get":
            return Outgoing("GET", task, None, "GET /tasks/{id}")
        verb = ":cancel" if operation == "cancel" else ":subscribe"
        return Outgoing("POST", task + verb, orjson.dumps(params), "POST /tasks/{id}" + verb)

    def _result(self, content: bytes | bytearray) -> Any:
        return self._json(content)

    def _event_result(self, event: SSEEvent, answer: Any) -> Any:
        error = answer.get("error") if isinstance(answer, dict) else None
        if event.name == "error" or isinstance(error, dict):
            status = error.get("code") if isinstance(error, dict) else None
            said = PeerHTTPError(
                status if type(status) is int else 500, f"an error event: {event.data[:2000]}", body=answer
            )
            raise self._failure(said)
        return answer

    def _failure(self, error: PeerHTTPError) -> AgentToolError:
        """The error with the A2A code its body's ErrorInfo names, and the body's own message."""
        read = error_of_status(error.body)
        if read is None:
            return error
        code, message = read
        return PeerHTTPError(error.status, message, code=code, body=error.body)
