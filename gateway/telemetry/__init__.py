"""The gateway's spans and metrics (on top of agent_server.telemetry); docs/observability.md lists every name."""
