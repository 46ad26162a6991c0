"""``switchboard serve MODULE:ATTR``: serve one agent (a HostedAgent or an async function) over HTTP."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from agent_server.http.limits import ServerLimits
from agent_server.http.speedups import DEFAULT_HTTP, DEFAULT_LOOP, EVENT_LOOPS, HTTP_PARSERS, not_installed
from agent_server.telemetry import tracing
from agent_server.telemetry.logs import configure_logging, uvicorn_logging
from gateway.cli.client import CommandFailed, UsageError
from gateway.cli.targets import load_target

if TYPE_CHECKING:
    from agent_server.extended_card import ExtendedCard
    from agent_server.push.settings import PushSettings

AGENT_TOKEN_ENV = "SWITCHBOARD_AGENT_TOKEN"
"""The environment variable whose value, when set, every call to ``switchboard serve`` must carry as bearer token."""
_LIMITS = ServerLimits()


def add_serve(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve one agent over HTTP (A2A-NDJSON)",
        description="Serve an agent (a HostedAgent or an async function) as its own HTTP service.",
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="e.g. examples/echo.py:agent or examples.echo:agent")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=_port, default=8000, help="port to listen on (default: 8000)")
    parser.add_argument(
        "--store",
        default="memory",
        help='task store: "memory" (default), "sqlite:PATH" or "redis://HOST:PORT/DB" (shared by replicas)',
    )
    parser.add_argument(
        "--cancel-on-disconnect", action="store_true", help="cancel a task when its stream's client goes away"
    )
    parser.add_argument("--public-url", default=None, help="the URL the agent card advertises")
    parser.add_argument(
        "--grpc-port",
        type=_port,
        default=None,
        metavar="PORT",
        help="also serve A2A over gRPC on this port of --host, listed in the card (needs the grpc extra; default: off)",
    )
    parser.add_argument(
        "--token-env",
        default=AGENT_TOKEN_ENV,
        metavar="NAME",
        help=f"the environment variable holding the token every call must carry (default: {AGENT_TOKEN_ENV})",
    )
    parser.add_argument(
        "--push",
        action="store_true",
        help="deliver push notifications to the webhooks callers give, on public hosts only (default: off)",
    )
    parser.add_argument(
        "--push-host",
        action="append",
        default=[],
        metavar="HOST",
        help="with --push, also post to this webhook host: a name, *.SUFFIX, an address or a network "
        "such as 10.0.0.0/8 (repeatable; private and loopback hosts are refused unless listed)",
    )
    parser.add_argument(
        "--extended-card",
        default=None,
        metavar="FILE",
        help="a TOML file with what a caller with the token learns beyond the public card: "
        "description and [[skills]] (needs a token; docs/a2a.md)",
    )
    parser.add_argument("--insecure", action="store_true", help="serve on a non-loopback --host even without a token")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument(
        "--log-format", default="text", choices=["text", "json"], help="text lines, or one JSON object per line"
    )
    parser.add_argument(
        "--max-connections",
        type=_positive_int,
        default=_LIMITS.max_connections,
        metavar="N",
        help="connections held at once; one more is answered 503 (default: %(default)s)",
    )
    parser.add_argument(
        "--header-timeout",
        type=_positive_seconds,
        default=_LIMITS.header_timeout_s,
        metavar="SECONDS",
        help="time a request has to complete its headers (default: %(default)g)",
    )
    parser.add_argument(
        "--body-timeout",
        type=_positive_seconds,
        default=_LIMITS.body_timeout_s,
        metavar="SECONDS",
        help="time a request has, after its headers, to complete its body (default: %(default)g)",
    )
    parser.add_argument(
        "--loop",
        choices=EVENT_LOOPS,
        default=DEFAULT_LOOP,
        help="the event loop: auto is uvloop when installed (the speed extra), else asyncio (default: %(default)s)",
    )
    parser.add_argument(
        "--http",
        choices=HTTP_PARSERS,
        default=DEFAULT_HTTP,
        help="the HTTP parser; httptools needs the speed extra (default: %(default)s)",
    )
    parser.set_defaults(run=_run_serve)


def _port(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535; anything else is a usage error (exit 2)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {text!r}")
    return port


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds greater than 0, got {text!r}")
    return value


def _run_serve(args: argparse.Namespace) -> int:
    import anyio

    from agent_server import as_hosted_agent, build_server, create_app, open_store, run_server
    from gateway.cli.startup import bind, quiet_startup

    token = os.environ.get(args.token_env, "").strip() or None
    if args.token_env != AGENT_TOKEN_ENV and token is None:
        raise UsageError(f"--token-env {args.token_env}: the environment variable {args.token_env} is not set")
    hint = f"set {AGENT_TOKEN_ENV} (or --token-env NAME) to the token callers must send"
    from agent_server.http.auth import open_binding_problem

    problem = open_binding_problem(args.host, token is not None, "an agent", hint)
    if problem is not None and not args.insecure:
        raise UsageError(problem)
    missing = not_installed(args.loop, args.http)
    if missing is not None:
        raise UsageError(f"--loop {args.loop} --http {args.http}: {missing}")
    from agent_server.bindings import grpc_installed

    if args.grpc_port is not None and not grpc_installed():
        raise UsageError("--grpc-port: gRPC needs the grpc extra: pip install 'a2a-switchboard[grpc]'")
    push = push_settings(args.push, args.push_host)
    extended_card = read_extended_card(args.extended_card, token is not None) if args.extended_card else None
    hosted = as_hosted_agent(_agent_at(args.target))
    try:
        store = open_store(args.store)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    configure_logging(args.log_level, args.log_format)
    tracing.configure(f"switchboard-agent-{hosted.name}")
    app = create_app(
        hosted,
        store=store,
        cancel_on_disconnect=args.cancel_on_disconnect,
        public_url=args.public_url,
        token=token,
        push=push,
        extended_card=extended_card,
        grpc_port=args.grpc_port,
        grpc_host=args.host,
    )
    limits = ServerLimits(
        max_connections=args.max_connections, header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout
    )
    try:
        listener = bind(args.host, args.port)
        print(serve_banner(hosted.name, listener, args, token_env=args.token_env if token else None), file=sys.stderr)
        server = build_server(
            app,
            host=args.host,
            port=args.port,
            limits=limits,
            loop=args.loop,
            http=args.http,
            log_level=args.log_level,
            timeout_graceful_shutdown=5,
            **uvicorn_logging(args.log_format),
        )
        try:
            with quiet_startup():
                run_server(server, sockets=[listener])
        except SystemExit as exc:
            if exc.code not in (0, None) and not server.started:
                raise CommandFailed("could not start: see the log above") from None
        finally:
            listener.close()
    finally:
        anyio.run(store.aclose)
    return 0


def serve_banner(name: str, listener: socket.socket, args: argparse.Namespace, *, token_env: str | None) -> str:
    """One line, as the gateway's summary: where the agent listens, what it serves, whether callers need a token."""
    from protocol.card import REST_PATH

    port = listener.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    grpc = f", gRPC on {host}:{args.grpc_port}" if args.grpc_port is not None else ""
    card = f", card advertises {args.public_url}" if args.public_url else ""
    token = f"token required (${token_env})" if token_env else "no token needed"
    return (
        f"switchboard serve: agent {name!r} on http://{host}:{port} "
        f"(A2A JSON-RPC at /, HTTP+JSON at {REST_PATH}, NDJSON at /tasks{grpc}{card}); {token}"
    )


def push_settings(enabled: bool, hosts: list[str]) -> PushSettings | None:
    """``--push`` and its ``--push-host`` entries as PushSettings (None: push is off); a bad host is a usage error."""
    from agent_server.push.hosts import WebhookHosts
    from agent_server.push.settings import PushSettings

    if not enabled:
        if hosts:
            raise UsageError("--push-host allows a webhook host for push notifications, which are off: add --push")
        return None
    try:
        WebhookHosts(hosts)
    except ValueError as exc:
        raise UsageError(f"--push-host: {exc}") from None
    return PushSettings(allowed_hosts=tuple(hosts))


def read_extended_card(path: str, has_token: bool) -> ExtendedCard:
    """The ``--extended-card`` file, read and checked as ``[gateway.extended_card]`` is (gateway/config/model.py)."""
    import tomllib

    from pydantic import ValidationError

    from gateway.config.face import ExtendedCardConfig
    from gateway.config.load import describe_error
    from protocol import dotted_path

    if not has_token:
        raise UsageError(
            f"--extended-card is for callers with a token: set {AGENT_TOKEN_ENV} (or --token-env NAME) too"
        )
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as exc:
        raise UsageError(f"--extended-card {path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--extended-card {path}: not valid TOML: {exc}") from None
    try:
        return ExtendedCardConfig.model_validate(data).card()
    except ValidationError as exc:
        problems = "; ".join(
            f"{dotted_path(tuple(error['loc'])) or 'the file'}: {describe_error(error)}" for error in exc.errors()
        )
        raise UsageError(f"--extended-card {path}: {problems}") from None


def _agent_at(spec: str) -> Any:
    """The agent named by ``spec``, refusing things that are clearly not agents."""
    from agent_server import HostedAgent

    target = load_target(spec, default_attr="agent")
    if isinstance(target, HostedAgent):
        return target
    if hasattr(target, "router") and hasattr(target, "middleware_stack"):
        raise UsageError(f"{spec} is an ASGI app, not an agent; point at the agent instead (e.g. examples.echo:agent)")
    if isinstance(target, type) or not callable(target):
        raise UsageError(
            f"{spec} is a {type(target).__name__}, not an agent; "
            "point at a HostedAgent or an async function (e.g. examples.echo:agent)"
        )
    return target
