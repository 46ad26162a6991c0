"""``switchboard gateway [--config FILE]``: run the gateway service until Ctrl-C or SIGTERM.

The configuration is checked before anything starts, the file and what only this machine
can tell (Python tools import, API key variables are set, store paths can exist; the same
check ``--check`` runs); every problem is printed with its file (or environment variable),
key and reason, and the exit code is 2. Once it is up, it prints what runs (summary.py):
the file's agents and tools with the registry's applied, each with where it came from. A remote agent
that still cannot be reached after ``gateway.startup_wait_secs`` stops it (exit code 1).
SIGTERM and Ctrl-C shut down gracefully: runs still going end ``run_failed`` (their streams
end with it), stores are closed, exit code 0.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import signal
import socket
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any

from gateway.cli.client import CommandFailed
from gateway.cli.startup import bind, quiet_startup

if TYPE_CHECKING:
    from gateway.config.model import GatewayConfig
    from gateway.service import GatewayService

LOG_LEVELS = ("debug", "info", "warning", "error")


def add_gateway(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "gateway",
        help="run the gateway service (HTTP API + A2A binding)",
        description=(
            "Serve the gateway: its management API, sessions with live NDJSON events, and the A2A-NDJSON binding. "
            "Settings come from --config FILE (TOML), then SWITCHBOARD_* environment variables, then --host/--port."
        ),
    )
    parser.add_argument("--config", "-c", default=None, metavar="FILE", help="TOML file (see docs/configuration.md)")
    parser.add_argument("--host", default=None, help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port to listen on (default 8080)")
    parser.add_argument(
        "--grpc-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the swarm's A2A face over gRPC on this port (gateway.grpc_port; needs the grpc extra)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=None,
        help="debug, info, warning or error (default: the configuration's gateway.log_level, info)",
    )
    parser.add_argument(
        "--log-format", default="text", choices=["text", "json"], help="text lines, or one JSON object per line"
    )
    parser.add_argument("--check", action="store_true", help="only check the configuration, print it, and exit")
    parser.add_argument(
        "--insecure", action="store_true", help="serve on a non-loopback host even without any token configured"
    )
    parser.set_defaults(run=run_gateway)


def run_gateway(args: argparse.Namespace) -> int:
    from agent_server.http.auth import open_binding_problem
    from gateway.config.load import load_config
    from gateway.config.model import ADMIN_TOKEN_ENV
    from gateway.errors import ConfigError
    from gateway.service import check_machine

    origin = args.config or "configuration"
    flags = (
        ("gateway.host", args.host),
        ("gateway.port", args.port),
        ("gateway.log_level", args.log_level),
        ("gateway.grpc_port", args.grpc_port),
    )
    overrides = {key: value for key, value in flags if value is not None}
    try:
        config = load_config(args.config, overrides=overrides)
    except ConfigError as exc:
        print(f"switchboard gateway: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    problems = check_machine(config, origin)
    if problems:
        print(f"switchboard gateway: invalid configuration:\n{ConfigError(problems)}", file=sys.stderr)
        return 2
    if args.check:
        sys.stdout.write(config.model_dump_json(indent=2) + "\n")
        return 0
    has_tokens = bool(os.environ.get(ADMIN_TOKEN_ENV, "").strip()) or bool(config.security.tokens)
    hint = f"set {ADMIN_TOKEN_ENV}, or [[security.tokens]] in the configuration"
    hosts = [config.gateway.host] + ([config.gateway.grpc_bind_host] if config.gateway.grpc_port is not None else [])
    problem = next(
        (found for host in hosts if (found := open_binding_problem(host, has_tokens, "the gateway", hint))), None
    )
    if problem is not None and not args.insecure:
        print(f"switchboard gateway: {problem}", file=sys.stderr)
        return 2
    listener = bind(config.gateway.host, config.gateway.port)
    try:
        return _serve(config, origin, listener, args.log_format)
    finally:
        listener.close()


def _serve(config: GatewayConfig, origin: str, listener: socket.socket, log_format: str) -> int:
    from agent_server import run_server
    from agent_server.telemetry.logs import configure_logging
    from gateway.errors import ConfigError
    from gateway.service import create_gateway_app
    from gateway.service.server import GatewayServer, build_gateway_server

    configure_logging(config.gateway.log_level, log_format)
    if config.gateway.log_level != "debug":
        logging.getLogger("httpx").setLevel(logging.WARNING)
    try:
        app = create_gateway_app(config, origin=origin)
    except ConfigError as exc:
        print(f"switchboard gateway: invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    server: GatewayServer = build_gateway_server(app, config, log_format=log_format)
    server.on_started = functools.partial(_print_summary, config, origin)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        with quiet_startup():
            run_server(server, sockets=[listener])
    except SystemExit as exc:
        if exc.code not in (0, None) and not server.started:
            raise _could_not_start(app.state, config, origin) from None
    if not server.started:
        raise _could_not_start(app.state, config, origin)
    return 0


async def _print_summary(config: GatewayConfig, origin: str, service: GatewayService) -> None:
    from gateway.cli.summary import summary
    from gateway.service.inventory import take_inventory

    print(summary(config, origin, await take_inventory(service)), file=sys.stderr, flush=True)


def _could_not_start(state: Any, config: GatewayConfig, origin: str) -> CommandFailed:
    """Uvicorn exits when the lifespan fails (a remote agent down); say why in one line, naming its entry."""
    from gateway.service import ServiceError

    reason = getattr(state, "startup_error", None)
    message = reason.message if isinstance(reason, ServiceError) else str(reason or "see the log above")
    data = reason.data if isinstance(reason, ServiceError) else None
    url = data.get("url") if isinstance(data, dict) else None
    entry = next((index for index, agent in enumerate(config.agents) if url and agent.url == url), None)
    if entry is not None:
        message = f"{origin}: agents[{entry}] ({config.agents[entry].name!r}): {message}"
    return CommandFailed(f"could not start: {message}")


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    """Uvicorn re-raises SIGTERM after its graceful shutdown; by then all is closed, so exit 0."""
    raise SystemExit(0)
