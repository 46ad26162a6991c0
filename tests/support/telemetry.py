"""What the observability tests run against: an OTLP/HTTP receiver, a scripted OpenAI-compatible endpoint.

Both are small Starlette apps a test serves on loopback with ``serve_app``. The receiver
parses what the OpenTelemetry exporters send (protobuf, opentelemetry-proto) into plain
``ReceivedSpan`` records; the endpoint plays a triage model that calls the tools of
``PLAN`` it is offered (``research``, ``colleague``), then transfers to ``billing``,
reporting fixed token counts for each call.
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
INNER = "[asked as an agent]"
ANSWER = "answer"
PLAN = (
    ("research", {"input": "tidal energy"}),
    ("colleague", {"input": f"{INNER} what is tidal energy?"}),
    ("transfer_to_billing", {"reason": "a charge to refund"}),
)
"""The tool calls the triage model makes in a turn, in order, each if it is offered."""
USAGE = {
    "research": {"prompt_tokens": 31, "completion_tokens": 3},
    "colleague": {"prompt_tokens": 37, "completion_tokens": 4},
    "transfer_to_billing": {"prompt_tokens": 47, "completion_tokens": 5},
    ANSWER: {"prompt_tokens": 13, "completion_tokens": 11},
}
"""What the endpoint reports for the call that makes each tool call, or answers."""


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
    """``POST /v1/chat/completions``: the tools of ``PLAN`` that are offered, in order, then an answer.

    A user message that starts with ``INNER`` (the gateway asked as an agent) is answered at once.
    """

    async def completions(request: Request) -> Response:
        body = orjson.loads(await request.body())
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        offered = {tool["function"]["name"] for tool in body.get("tools") or []}
        called = {c["function"]["name"] for m in messages[last_user:] for c in m.get("tool_calls") or []}
        inner = str(messages[last_user]["content"]).startswith(INNER)
        step = None if inner else next((p for p in PLAN if p[0] in offered and p[0] not in called), None)
        name = step[0] if step is not None else ANSWER
        usage = {**USAGE[name], "total_tokens": sum(USAGE[name].values())}
        delta: dict[str, Any] = {"content": "Tidal energy comes from the moon's pull on the sea."}
        if step is not None:
            function = {"name": step[0], "arguments": orjson.dumps(step[1]).decode()}
            delta = {"tool_calls": [{"index": 0, "id": f"call_{name}", "type": "function", "function": function}]}
        finish = "stop" if step is None else "tool_calls"
        if not body.get("stream"):
            message = {"role": "assistant", "content": delta.get("content"), "tool_calls": delta.get("tool_calls")}
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return Response(orjson.dumps({"choices": [choice], "usage": usage}), media_type="application/json")
        chunks = [
            {"choices": [{"index": 0, "delta": delta}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {"choices": [], "usage": usage},
        ]
        lines = [b"data: " + orjson.dumps(chunk) + b"\n\n" for chunk in chunks] + [b"data: [DONE]\n\n"]
        return StreamingResponse(iter(lines), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
