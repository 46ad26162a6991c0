"""What the observability tests run against: an OTLP/HTTP receiver, a scripted OpenAI-compatible endpoint.

Both are small Starlette apps a test serves on loopback with ``serve_app``. The receiver
parses what the OpenTelemetry exporters send (protobuf, opentelemetry-proto) into plain
``ReceivedSpan`` records; the endpoint plays a triage model that calls the ``research``
tool, then transfers to ``billing``, reporting fixed token counts for each call.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

PROTOBUF = "application/x-protobuf"
USAGE = ({"prompt_tokens": 31, "completion_tokens": 3}, {"prompt_tokens": 47, "completion_tokens": 5})
"""What the endpoint reports for its first and its second call of a turn."""


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    attributes: dict[str, Any]


class OTLPReceiver:
    """``POST /v1/traces``: every span received, in arrival order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[ReceivedSpan] = []
        self.app = Starlette(routes=[Route("/v1/traces", self._traces, methods=["POST"])])

    @property
    def spans(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self._spans)

    async def _traces(self, request: Request) -> Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.body())
        received = []
        for resource_spans in export.resource_spans:
            service = str(_attributes(resource_spans.resource.attributes).get("service.name"))
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            service=service,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=span.kind,
                            attributes=_attributes(span.attributes),
                        )
                    )
        with self._lock:
            self._spans.extend(received)
        return Response(ExportTraceServiceResponse().SerializeToString(), media_type=PROTOBUF)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return getattr(value, which) if which else None


def triage_model_app() -> Starlette:
    """``POST /v1/chat/completions``: research first, then a transfer to billing (plain or streamed)."""

    async def completions(request: Request) -> Response:
        body = orjson.loads(await request.body())
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        researched = any(m["role"] == "tool" for m in messages[last_user:])
        step = 1 if researched else 0
        if researched:
            call = {"name": "transfer_to_billing", "arguments": orjson.dumps({"reason": "a charge to refund"}).decode()}
        else:
            call = {"name": "research", "arguments": orjson.dumps({"input": "tidal energy"}).decode()}
        tool_call = {"id": f"call_{step}", "type": "function", "function": call}
        usage = {**USAGE[step], "total_tokens": sum(USAGE[step].values())}
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": [tool_call]}
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
            return Response(orjson.dumps({"choices": [choice], "usage": usage}), media_type="application/json")
        chunks = [
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, **tool_call}]}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            {"choices": [], "usage": usage},
        ]
        lines = [b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks] + [b"data: [DONE]\n\n"]
        return StreamingResponse(iter(lines), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
