"""A standard A2A agent over the JSON-RPC binding (v1.0, or v0.3), through the same HTTP client as the NDJSON one.

Each request is a JSON-RPC 2.0 POST to the card's interface URL with ``A2A-Version``;
streams are Server-Sent Events, each ``data:`` a JSON-RPC response, read as the task
model's events by the one stream mapping (protocol/a2a/streams.py). The operations, their
resumes and folds are what every standard peer shares (standard.py), the requests and SSE
streams what the ones over HTTP share (sse.py):

- ``subscribe``: ``SendStreamingMessage`` / ``message/stream``, resumed by
  ``SubscribeToTask`` / ``tasks/resubscribe``; ``send``: the folded stream, or
  ``SendMessage`` / ``message/send`` for an agent that does not stream;
- ``cancel``: ``CancelTask`` / ``tasks/cancel``; ``get``: ``GetTask`` / ``tasks/get``.

A JSON-RPC error answer is a ``PeerRPCError`` with the peer's code and message.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from gateway.errors import PeerProtocolError, PeerRPCError
from gateway.peers.http_client import PeerHttpClient
from gateway.peers.limits import PeerLimits
from gateway.peers.sse import Outgoing, SsePeer
from gateway.peers.standard import V03_RESULT
from protocol import A2A_V1, AgentCard, ErrorCode, SSEEvent, TaskSendParams
from protocol.a2a import VERSION_HEADER, send_request_to_v1, v03, v1
from protocol.sse import MEDIA_TYPE as SSE_MEDIA_TYPE

_METHODS = {
    A2A_V1: {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "subscribe": "SubscribeToTask",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "0.3": {
        "send": "message/send",
        "stream": "message/stream",
        "subscribe": "tasks/resubscribe",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
}


class JsonRpcPeer(SsePeer):
    """The agent at ``url`` (its card's JSON-RPC interface, on the host it was registered at), speaking ``version``."""

    def __init__(
        self,
        uri: str,
        url: str,
        version: str,
        card: AgentCard,
        client: PeerHttpClient,
        limits: PeerLimits,
        *,
        token: str | None = None,
    ) -> None:
        headers = {"content-type": "application/json", "accept": "application/json", VERSION_HEADER: version}
        stream_headers = {**headers, "accept": SSE_MEDIA_TYPE}
        super().__init__(uri, url, client, limits, headers=headers, stream_headers=stream_headers, token=token)
        self.version = version
        self.binding = f"jsonrpc-{version}"
        self._card = card
        self._methods = _METHODS[version]

    def _request(self, operation: str, params: dict[str, Any]) -> Outgoing:
        method = self._methods[operation]
        call = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        return Outgoing("POST", "", orjson.dumps(call), method)

    def _result(self, content: bytes | bytearray) -> Any:
        answer = self._json(content)
        if not isinstance(answer, dict) or ("result" not in answer and not isinstance(answer.get("error"), dict)):
            raise PeerProtocolError(
                f"{self.uri} answered something that is not a JSON-RPC response", reason="bad_answer"
            )
        if "error" in answer and isinstance(answer["error"], dict):
            raise _rpc_error(answer["error"])
        return answer["result"]

    def _event_result(self, event: SSEEvent, answer: Any) -> Any:
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            raise _rpc_error(answer["error"])
        return answer.get("result") if isinstance(answer, dict) else None

    def _stream_response(self, result: Any) -> tuple[v1.StreamResponse, bool]:
        if self.version == A2A_V1:
            return super()._stream_response(result)
        legacy = V03_RESULT.validate_python(result)
        final = isinstance(legacy, v03.TaskStatusUpdateEvent) and legacy.final
        return v03.result_to_v1(legacy), final

    @property
    def _reads_text_updates(self) -> bool:
        return self.version == A2A_V1

    def _send_params(self, params: TaskSendParams) -> dict[str, Any]:
        request = send_request_to_v1(params)
        return request.to_wire() if self.version == A2A_V1 else v03.send_params_from_v1(request).to_wire()


def _rpc_error(error: dict[str, Any]) -> PeerRPCError:
    code = error.get("code")
    message = error.get("message")
    return PeerRPCError(
        code if isinstance(code, int) and not isinstance(code, bool) else ErrorCode.INTERNAL_ERROR,
        message if isinstance(message, str) else "(no message)",
        data=error.get("data"),
    )
