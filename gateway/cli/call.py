"""``switchboard call URI TEXT``: call an agent as a tool through an in-process Gateway, showing each step.

No gateway service is needed: the command makes its own Gateway, calls the agent once
and prints the call's events as they are written (NDJSON when stdout is not a terminal).
An agent behind a token (``switchboard serve`` with one, or a gateway's A2A face) is sent
``--token`` or ``$SWITCHBOARD_GATEWAY_TOKEN``, as the other commands send theirs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gateway.cli.client import TOKEN_HELP, CommandFailed, UsageError, default_token, token_hint
from gateway.defaults import IDLE_TIMEOUT_S, TOOL_TIMEOUT_MS

if TYPE_CHECKING:
    from gateway.calls.result import AgentToolResult
    from gateway.cli.progress import NDJSONRenderer, ProgressRenderer
    from gateway.errors import AgentToolError
    from gateway.event_log import EventLog

    Renderer = NDJSONRenderer | ProgressRenderer

_TOOL_NAME = "call"


def add_call(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "call",
        help="call an agent once as a tool, showing progress live",
        description=(
            "Call the agent at URI (http(s)://..., mcp+stdio:..., mcp+http://...) with TEXT. "
            "On a terminal a progress line shows chunks and cost, then the answer; "
            "when piped, every event is printed as one NDJSON line as it happens. "
            "Exit code 1 when the call fails."
        ),
    )
    parser.add_argument("uri", metavar="URI", help="the agent, e.g. http://127.0.0.1:8000")
    parser.add_argument("text", metavar="TEXT", help="the message to send")
    parser.add_argument("--mode", choices=["sync", "streaming", "conversational"], default="sync", help="default: sync")
    parser.add_argument("--budget", type=_non_negative, metavar="USD", help="stop (and cancel) above this cost")
    parser.add_argument(
        "--idle-timeout",
        type=_positive,
        metavar="S",
        default=IDLE_TIMEOUT_S,
        help=f"streaming: stop after S seconds without data (default {IDLE_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--max-turns", type=_positive_int, metavar="N", help="conversational: at most N turns (default 5)"
    )
    parser.add_argument(
        "--timeout-ms",
        type=_positive_int,
        metavar="MS",
        default=TOOL_TIMEOUT_MS,
        help=f"deadline of each request (default {TOOL_TIMEOUT_MS})",
    )
    parser.add_argument("--token", default=None, metavar="TOKEN", help=TOKEN_HELP.replace("a gateway", "an agent"))
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="also log each step on stderr (default: errors only)"
    )
    parser.set_defaults(run=run_call)


def run_call(args: argparse.Namespace) -> int:
    if args.max_turns is not None and args.mode != "conversational":
        raise UsageError("--max-turns applies to --mode conversational only")
    import anyio

    from gateway.cli.progress import NDJSONRenderer, ProgressRenderer

    out = sys.stdout
    renderer: Renderer = ProgressRenderer(out, args.uri, args.mode) if out.isatty() else NDJSONRenderer(out)
    try:
        with _logging(args.verbose):
            anyio.run(_call, args, renderer)
    except CommandFailed as exc:
        print(f"switchboard call: {exc}", file=sys.stderr)
        return 1
    return 0


@contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """Log to stderr while the command runs: only errors unless ``verbose`` (then each step).

    Without a handler, Python's last resort would print the ``gateway.events`` warning of a
    failed call next to the command's own one-line message, saying the same thing twice.
    """
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("switchboard call: %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.INFO if verbose else logging.ERROR)
    level = root.level
    root.addHandler(handler)
    if verbose:
        root.setLevel(min(level, logging.INFO) if level else logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def _call(args: argparse.Namespace, renderer: Renderer) -> None:
    import anyio

    from gateway.calls.coordinator import Gateway
    from gateway.errors import AgentToolError
    from gateway.recording.recorder import new_run_id

    mode: Any = args.mode
    if args.mode == "conversational" and args.max_turns is not None:
        mode = {"conversational": {"max_turns": args.max_turns}}
    gateway = Gateway()
    try:
        tool = gateway.add_agent_tool(
            _TOOL_NAME,
            agent=args.uri,
            mode=mode,
            timeout_ms=args.timeout_ms,
            budget={"max_cost_usd": args.budget},
            streaming={"idle_timeout_secs": args.idle_timeout},
            token=(args.token or "").strip() or default_token(),
        )
    except ValueError as exc:
        await gateway.aclose()
        raise UsageError(str(exc)) from None
    async with gateway:
        run_id = new_run_id()
        result: AgentToolResult | None = None
        error: AgentToolError | None = None
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_show, gateway.event_log, run_id, renderer)
            try:
                result = await gateway.call_tool(tool.name, args.text, run_id=run_id)
            except AgentToolError as exc:
                error = exc
            finally:
                await gateway.event_log.close_run(run_id)
        renderer.finish(result, error)
    if error is not None:
        raise CommandFailed(f"the call failed ({error.reason}): {error.message}{_token_advice(error)}")


def _token_advice(error: AgentToolError) -> str:
    """What to set when the agent asked for a (better) token, else nothing."""
    from gateway.errors import PeerHTTPError

    hint = token_hint(error.status) if isinstance(error, PeerHTTPError) else None
    return f" ({hint})" if hint else ""


async def _show(log: EventLog, run_id: str, renderer: Renderer) -> None:
    async for event in log.follow(run_id):
        renderer.event(event)


def _number(raw: str, kind: type[float] | type[int], what: str) -> Any:
    try:
        return kind(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {raw!r}") from None


def _positive(raw: str) -> float:
    value = _number(raw, float, "a positive number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {raw!r}")
    return float(value)


def _non_negative(raw: str) -> float:
    value = _number(raw, float, "a number >= 0")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {raw!r}")
    return float(value)


def _positive_int(raw: str) -> int:
    value = _number(raw, int, "a positive integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {raw!r}")
    return int(value)
