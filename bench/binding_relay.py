"""The gateway relaying the same upstream agent over each binding: NDJSON, JSON-RPC/SSE, HTTP+JSON/SSE, gRPC.

    python -m bench.binding_relay [--quick]

One upstream process serves one ``agent_server`` app (a streaming agent: a message ``N`` makes
N text chunks, at once: bench/_chunks.py) with every binding: NDJSON, JSON-RPC and
HTTP+JSON (``/a2a/rest``) on its HTTP port, gRPC on a second port (``create_app(grpc_port=0)``).
The gateway picks a binding from the card, so the same process also answers
``/via/{binding}/.well-known/agent-card.json``: the app's own card with only that binding's
interface left in ``supportedInterfaces``. One ``switchboard gateway`` process
(``python -m gateway gateway --config FILE``: memory stores, WARNING logs) has four streaming
agent tools, one per ``/via/{binding}`` URI of that upstream; both processes run on the servers'
core, the client in this process on the other.

The client calls each tool through the gateway's tool route (``POST /tools/{name}/call`` with
``stream: true``), reads the NDJSON it streams with httpx and counts the artifact progress
events (each line parsed). Each round measures every binding (the order rotates from round to
round), a few streams at once, for a bounded time and count; the report gives each binding's
median events/s and the median of its per-round ratio to the NDJSON path of the same round.

The ``grpc-stack`` row is grpc.aio alone (bench/_grpc_stack.py): a bare server streaming the
same number of A2A messages to a bare client in another process on the servers' core, in the
same rounds; the gRPC relay has that much to do and more, so its ratio is where the gRPC row
could reach at best.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import anyio
import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._chunks import Settings, chunks_agent
from bench._support import client_core, cores, pinning, python, rate, server_core_process, server_process
from protocol import GRPC_BINDING, HTTP_JSON_BINDING, JSONRPC_BINDING, NDJSON_BINDING, NDJSONDecoder

CHUNKS = 200
CONCURRENCY = 4
CARD_PATH = "/.well-known/agent-card.json"
BINDINGS = {  # the tool's (and the path's) name -> the interface its card keeps
    "ndjson": NDJSON_BINDING,
    "jsonrpc": JSONRPC_BINDING,
    "rest": HTTP_JSON_BINDING,
    "grpc": GRPC_BINDING,
}
BASELINE = "ndjson"
STACK = "grpc-stack"
"""The row of the bare gRPC stack (bench/_grpc_stack.py): what a gRPC relay could reach at best."""


# -- the upstream (a subprocess: python -m bench.binding_relay --serve-upstream PORT) ---------------


def _serve_upstream(port: int) -> None:
    """The app with every binding, behind a wrapper that answers the one-binding cards (asking the app for its own)."""
    from starlette.types import Receive, Scope, Send

    from agent_server import create_app
    from agent_server.http.server import build_server, run_server

    app = create_app(chunks_agent(), grpc_port=0)
    own_url = f"http://127.0.0.1:{port}"

    async def one_binding_card(binding: str) -> bytes:
        async with httpx.AsyncClient(timeout=10.0) as client:
            response = await client.get(own_url + CARD_PATH, headers={"A2A-Version": "1.0"})
        card = response.raise_for_status().json()
        card["supportedInterfaces"] = [
            interface for interface in card["supportedInterfaces"] if interface["protocolBinding"] == binding
        ]
        if not card["supportedInterfaces"]:
            raise RuntimeError(f"the app's card lists no {binding} interface")
        return orjson.dumps(card)

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        parts = scope["path"].split("/") if scope["type"] == "http" else []
        if len(parts) == 5 and parts[1] == "via" and parts[2] in BINDINGS and "/" + "/".join(parts[3:]) == CARD_PATH:
            body = await one_binding_card(BINDINGS[parts[2]])
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    run_server(build_server(wrapped, host="127.0.0.1", port=port, log_level="warning"))


def _gateway_config(data_dir: Path, upstream: str) -> str:
    """Its ``data_dir``, the memory stores, WARNING logs, and one streaming tool per binding of the one upstream."""
    tools = "".join(
        f'[[tools]]\nname = "{name}"\nagent = "{upstream}/via/{name}"\nmode = "streaming"\n\n' for name in BINDINGS
    )
    return (
        f'[gateway]\nhost = "127.0.0.1"\ndata_dir = "{data_dir}"\nlog_level = "warning"\n\n'
        f'[stores]\nevents = "memory"\nsessions = "memory"\n\n{tools}'
    )


# -- the client ---------------------------------------------------------------------------------------


async def read_tool(client: httpx.AsyncClient, gateway: str, tool: str, chunks: int) -> int:
    """One streaming tool call read to its end: its artifact progress events (every line parsed)."""
    body = orjson.dumps({"input": str(chunks), "stream": True})
    decoder = NDJSONDecoder()
    events = 0
    async with client.stream(
        "POST", f"{gateway}/tools/{tool}/call", content=body, headers={"content-type": "application/json"}
    ) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{tool}: {response.status_code} {(await response.aread())[:300]!r}")
        async for chunk in response.aiter_raw():
            for line in decoder.feed(chunk):
                if not isinstance(line, dict):
                    raise RuntimeError(f"{tool}: a line that is not an event: {line!r}")
                if line.get("type") == "agent_tool_progress" and line.get("kind") == "artifact":
                    events += 1
                elif line.get("type") == "error" or line.get("status") == "failed":
                    raise RuntimeError(f"{tool}: {line}")
    return events


async def stack_rate(port: int, settings: Settings) -> float:
    """The bare gRPC stack's messages per second (bench/_grpc_stack.py), its client on the servers' core."""
    servers, _ = cores()
    core = min(servers) if servers else -1
    command = python("-m", "bench._grpc_stack", "measure", str(port), str(core), str(CONCURRENCY), str(CHUNKS))
    done = await anyio.run_process([*command, str(settings.streams), str(settings.seconds)])
    return float(done.stdout.decode().split()[-1])


async def measure(
    settings: Settings, gateway: str, out: Callable[[str], None], stack_port: int | None = None
) -> dict[str, list[float]]:
    """Each binding's events/s per round; with ``stack_port``, the bare gRPC stack's rate too (``STACK``)."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    names = tuple(BINDINGS)
    rates: dict[str, list[float]] = {name: [] for name in names}
    async with httpx.AsyncClient(limits=limits, timeout=60.0) as client:
        ops: dict[str, Callable[[], Awaitable[int]]] = {
            name: functools.partial(read_tool, client, gateway, name, CHUNKS) for name in names
        }
        for name in names:  # warm-up (the gateway reads each card), and a check that each path relays every chunk
            events = await ops[name]()
            if events < CHUNKS:
                raise RuntimeError(f"{name}: {events} events for {CHUNKS} chunks")
        measured: dict[str, Callable[[], Awaitable[float]]] = {
            name: functools.partial(
                rate, ops[name], concurrency=CONCURRENCY, count=settings.streams, seconds=settings.seconds
            )
            for name in names
        }
        if stack_port is not None:
            rates[STACK] = []
            measured[STACK] = functools.partial(stack_rate, stack_port, settings)
        order = tuple(measured)
        for round_ in range(settings.rounds):
            shift = round_ % len(order)
            for name in order[shift:] + order[:shift]:
                rates[name].append(await measured[name]())
            base = rates[BASELINE][-1]
            out(
                f"round {round_ + 1}: "
                + "  ".join(f"{name} {rates[name][-1]:7.0f}/s ({rates[name][-1] / base:.2f})" for name in order)
            )
    return rates


def report(rates: dict[str, list[float]]) -> str:
    lines = [f"{'binding':<10}{'median events/s':>17}  ratio to {BASELINE} (median of rounds)"]
    for name, values in rates.items():
        ratios = [value / base for value, base in zip(values, rates[BASELINE], strict=True)]
        lines.append(f"{name:<10}{statistics.median(values):>17.0f}{statistics.median(ratios):>12.2f}")
    return "\n".join(lines)


def settings_for(quick: bool) -> Settings:
    return Settings(rounds=2, seconds=1.0, streams=40) if quick else Settings(rounds=6, seconds=3.0, streams=400)


@contextmanager
def stack_server(log: Path) -> Iterator[int]:
    """The bare gRPC server (bench/_grpc_stack.py) on the servers' core; yields its port (its client waits for it)."""
    port = free_port()
    with server_core_process(python("-m", "bench._grpc_stack", "serve", str(port)), log):
        yield port


def run(settings: Settings, out: Callable[[str], None] = print, *, grpc_stack: bool = False) -> dict[str, list[float]]:
    """Every binding's rates by round; ``grpc_stack``: the bare gRPC stack's too, as ``STACK``."""
    with tempfile.TemporaryDirectory() as tmp_dir, client_core(), ExitStack() as stack:
        tmp = Path(tmp_dir)
        stack_port = stack.enter_context(stack_server(tmp / "grpc_stack.log")) if grpc_stack else None
        upstream_command = python("-m", "bench.binding_relay", "--serve-upstream", "{port}")
        upstream = stack.enter_context(server_process(upstream_command, CARD_PATH, tmp / "upstream.log"))
        config = tmp / "gateway.toml"
        config.write_text(_gateway_config(tmp / "data", upstream))
        gateway_command = python("-m", "gateway", "gateway", "--config", str(config), "--port", "{port}")
        gateway = stack.enter_context(server_process(gateway_command, "/health", tmp / "gateway.log"))
        out(
            f"the gateway relaying one upstream over each binding; {CHUNKS} chunks per stream, "
            f"{CONCURRENCY} streams at once; {pinning()}"
        )
        return anyio.run(measure, settings, gateway, out, stack_port)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two short rounds")
    parser.add_argument("--serve-upstream", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_upstream is not None:
        _serve_upstream(args.serve_upstream)
        return
    print(report(run(settings_for(args.quick), grpc_stack=True)), flush=True)


if __name__ == "__main__":
    main()
