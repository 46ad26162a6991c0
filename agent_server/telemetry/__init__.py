"""Traces (OpenTelemetry) and metrics (Prometheus) of a service; docs/observability.md lists every name."""
