"""OpenTelemetry tracing of a process: on when the standard ``OTEL_*`` environment names an exporter.

``configure(service_name)`` is called once per process by whatever starts a server (the
agent server's ``serve``, the CLI's ``serve`` and ``gateway``). Tracing is on when
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (or
``OTEL_TRACES_EXPORTER`` is ``otlp`` or ``console``), unless ``OTEL_SDK_DISABLED=true`` or
``OTEL_TRACES_EXPORTER=none``. Then the SDK (the ``otel`` extra) exports spans in batches
over OTLP/HTTP, configured by the rest of the standard variables (endpoint, headers,
``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_BSP_*``), and W3C
``traceparent`` is read from and written into the headers of every request.

Off, nothing of OpenTelemetry is imported and ``span()`` is one shared no-op context
manager: a call costs a global read. Span names and attributes: docs/observability.md.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

logger = logging.getLogger("agent_server.telemetry")

Kind = Literal["internal", "server", "client"]
Attributes = Mapping[str, str | bool | int | float]

_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_NOOP: AbstractContextManager[None] = nullcontext()


class _State:
    """The process's tracer once ``configure`` turned tracing on."""

    configured = False
    tracer: Tracer | None = None
    kinds: dict[str, Any] = {}  # noqa: RUF012 - filled once, by configure


_state = _State()


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for traces (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return exporter in ("otlp", "console") or any(env.get(name) for name in _ENDPOINT_VARIABLES)


def configure(service_name: str) -> bool:
    """Set up the process's tracer provider when the environment asks for traces; True when on.

    ``service_name`` is the default of ``OTEL_SERVICE_NAME``. A second call is a no-op. A
    missing SDK is one warning line (install the ``otel`` extra), not a failure.
    """
    if _state.configured:
        return _state.tracer is not None
    _state.configured = True
    if not wanted():
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
        from opentelemetry.trace import SpanKind
    except ImportError:
        logger.warning(
            "OTEL_* asks for traces but the OpenTelemetry SDK is missing: pip install 'a2a-switchboard[otel]'"
        )
        return False
    exporter: SpanExporter
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    _state.kinds = {"internal": SpanKind.INTERNAL, "server": SpanKind.SERVER, "client": SpanKind.CLIENT}
    _state.tracer = trace.get_tracer("switchboard")
    return True


def enabled() -> bool:
    """Whether spans are recorded in this process."""
    return _state.tracer is not None


def span(
    name: str, attributes: Attributes | None = None, *, kind: Kind = "internal", context: Context | None = None
) -> AbstractContextManager[Span | None]:
    """A span made current for the block (the no-op context manager when tracing is off)."""
    tracer = _state.tracer
    if tracer is None:
        return _NOOP
    return tracer.start_as_current_span(name, context=context, kind=_state.kinds[kind], attributes=attributes)


def set_attributes(current: Span | None, attributes: Mapping[str, Any]) -> None:
    """Add attributes known only at the end (an outcome, token counts); None values are left out."""
    if current is None:
        return
    for key, value in attributes.items():
        if value is not None:
            current.set_attribute(key, value)


def inject(headers: MutableMapping[str, str]) -> None:
    """Write the current span's ``traceparent`` (and ``tracestate``) into outgoing headers."""
    if _state.tracer is None:
        return
    from opentelemetry.propagate import inject as otel_inject

    otel_inject(headers)


def extract(headers: Mapping[str, str]) -> Context | None:
    """The caller's trace context from incoming headers (None when tracing is off)."""
    if _state.tracer is None:
        return None
    from opentelemetry.propagate import extract as otel_extract

    return otel_extract(headers)


def current_trace_id() -> str | None:
    """The current span's trace id as 32 hex digits; None when tracing is off or no span is current."""
    if _state.tracer is None:
        return None
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
