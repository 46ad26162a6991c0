"""What tracing and metrics cost the relay: chunks/s of streaming tool calls, telemetry on against off.

    python -m bench.telemetry_overhead [--quick] [--chunks 3000] [--streams 4] [--rounds 6]

One agent server (agent_server's scripted agent, streaming its chunks as fast as it can)
and two gateways, each ``python -m gateway gateway --config FILE`` with one streaming tool
pointing at it, run as subprocesses on 127.0.0.1. The gateway "on" exports spans over
OTLP/HTTP (``OTEL_EXPORTER_OTLP_ENDPOINT``) to a sink in this process that accepts and
drops them, and records its Prometheus metrics (scraped once per round); the gateway "off"
has no ``OTEL_*`` variable and ``SWITCHBOARD_METRICS=off``. Both use the default SQLite
stores. A round runs ``STREAMS`` concurrent ``POST /tools/stream/call`` (``stream: true``),
each of ``CHUNKS`` chunks, through one gateway, then through the other (the order alternates
by round), and counts the ``agent_tool_progress`` events read per second of wall time. The
medians over rounds end with the on/off ratio (the aim: >= 0.9). Where the machine has two
cores, the servers share one and this process (client and sink) has the other.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_server.http.loopback import free_port
from bench._support import STOP_S, stop, wait_ready

_AGENT_SERVER = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "import sys; serve(scripted_agent(), port=int(sys.argv[1]), log_level='warning')"
)
_STARTUP_S = 90.0
_CALL_S = 300.0


@dataclass(frozen=True)
class Settings:
    chunks: int = 3000
    streams: int = 4
    rounds: int = 6


@dataclass(frozen=True)
class Round:
    number: int
    mode: str
    chunks: int
    wall_s: float

    @property
    def rate(self) -> float:
        return self.chunks / self.wall_s


def parse_settings(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m bench.telemetry_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (300 chunks, 2 streams, 2 rounds)")
    parser.add_argument("--chunks", type=int, default=Settings.chunks)
    parser.add_argument("--streams", type=int, default=Settings.streams)
    parser.add_argument("--rounds", type=int, default=Settings.rounds)
    args = parser.parse_args(argv)
    if args.quick:
        return Settings(chunks=300, streams=2, rounds=2)
    return Settings(chunks=max(1, args.chunks), streams=max(1, args.streams), rounds=max(1, args.rounds))


def measure(settings: Settings, show: Callable[[str], None] = print) -> list[Round]:
    """Every round, printed as it ends (``show``), then the medians and the ratio."""
    rounds: list[Round] = []
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-telemetry-") as tmp:
        client_cores, server_cores = _placement()
        if client_cores:
            affinity = os.sched_getaffinity(0)
            os.sched_setaffinity(0, client_cores)
            stack.callback(os.sched_setaffinity, 0, affinity)
        sink = stack.enter_context(_sink())
        agent_port = free_port()
        agent_url = f"http://127.0.0.1:{agent_port}"
        agent_log = Path(tmp) / "agent.log"
        agent = stack.enter_context(
            _process([sys.executable, "-c", _AGENT_SERVER, str(agent_port)], {}, server_cores, agent_log)
        )
        wait_ready(agent_url + "/.well-known/agent.json", agent, "the agent server", agent_log, timeout_s=_STARTUP_S)
        gateways = {}
        started: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        for mode, env in (("on", {"OTEL_EXPORTER_OTLP_ENDPOINT": sink}), ("off", {"SWITCHBOARD_METRICS": "off"})):
            port = free_port()
            config = Path(tmp) / f"{mode}.toml"
            config.write_text(
                f'[gateway]\nport = {port}\ndata_dir = "{Path(tmp) / mode}"\nlog_level = "warning"\n\n'
                f'[[tools]]\nname = "stream"\nagent = "{agent_url}"\nmode = "streaming"\n'
            )
            command = [sys.executable, "-m", "gateway", "gateway", "--config", str(config)]
            log = Path(tmp) / f"{mode}.log"
            gateways[mode] = f"http://127.0.0.1:{port}"
            started[mode] = (stack.enter_context(_process(command, env, server_cores, log)), log)
        for mode, (process, log) in started.items():
            wait_ready(
                gateways[mode] + "/health", process, f"the gateway with telemetry {mode}", log, timeout_s=_STARTUP_S
            )
        show(
            f"telemetry overhead: {settings.streams} streams x {settings.chunks} chunks, {settings.rounds} rounds; "
            f"servers on cores {sorted(server_cores) if server_cores else 'any'}, client and span sink on "
            f"{sorted(client_cores) if client_cores else 'any'}"
        )
        anyio.run(_calls, gateways["on"], Settings(chunks=50, streams=1, rounds=1))  # warm both up
        anyio.run(_calls, gateways["off"], Settings(chunks=50, streams=1, rounds=1))
        for number in range(1, settings.rounds + 1):
            order = ("on", "off") if number % 2 else ("off", "on")
            for mode in order:
                chunks, wall = anyio.run(_calls, gateways[mode], settings)
                rounds.append(Round(number, mode, chunks, wall))
                show(f"round {number} {mode:>3}: {chunks} chunks in {wall:.2f} s = {chunks / wall:,.0f} chunks/s")
            scrape = httpx.get(gateways["on"] + "/metrics", timeout=10.0)
            if scrape.status_code != 200 or "switchboard_agent_tool_calls_total" not in scrape.text:
                raise RuntimeError(f"the gateway with telemetry on serves no metrics: {scrape.status_code}")
        on = statistics.median(r.rate for r in rounds if r.mode == "on")
        off = statistics.median(r.rate for r in rounds if r.mode == "off")
        show(f"median chunks/s: on {on:,.0f}, off {off:,.0f}; ratio on/off {on / off:.3f} (aim >= 0.9)")
        deadline = time.monotonic() + _STARTUP_S
        while _Sink.received == 0 and time.monotonic() < deadline:  # the batch exporter sends every 5 s
            time.sleep(0.1)
        if _Sink.received == 0:
            raise RuntimeError("the gateway with telemetry on exported no spans")
        show(f"span exports received by the sink: {_Sink.received}")
    return rounds


async def _calls(url: str, settings: Settings) -> tuple[int, float]:
    """``streams`` concurrent streaming calls; the progress events read, and the wall time."""
    counts: list[int] = []
    body = orjson.dumps({"input": f"stream {settings.chunks} 0 0", "stream": True})
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(_CALL_S)) as client:

        async def call() -> None:
            count = 0
            headers = {"content-type": "application/json"}
            async with client.stream("POST", "/tools/stream/call", content=body, headers=headers) as response:
                async for line in response.aiter_lines():
                    if '"agent_tool_progress"' in line:
                        count += 1
                    elif '"agent_tool_completed"' in line:
                        counts.append(count)
                    elif line and ('"agent_tool_error"' in line or '"agent_tool_terminated"' in line):
                        raise RuntimeError(f"a call failed: {line[:300]}")

        started = time.perf_counter()
        with anyio.fail_after(_CALL_S):
            async with anyio.create_task_group() as group:
                for _ in range(settings.streams):
                    group.start_soon(call)
        wall = time.perf_counter() - started
    if len(counts) != settings.streams:
        raise RuntimeError(f"{settings.streams - len(counts)} calls did not complete")
    return sum(counts), wall


class _Sink:
    received = 0


@contextmanager
def _sink() -> Iterator[str]:
    """An OTLP/HTTP endpoint that accepts every export and drops it; its base URL."""

    async def traces(request: Request) -> Response:
        await request.body()
        _Sink.received += 1
        return Response(b"", media_type="application/x-protobuf")

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + _STARTUP_S
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the span sink did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=STOP_S)


@contextmanager
def _process(
    command: list[str], env: dict[str, str], cores: set[int] | None, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SWITCHBOARD", "OTEL_"))}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command if not cores else ["taskset", "-c", ",".join(map(str, sorted(cores))), *command],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**base, **env},
        )
    try:
        yield process
    finally:
        stop(process)


def _placement() -> tuple[set[int] | None, set[int] | None]:
    """(this process's cores, the servers' cores): one each where there are two, else no pinning."""
    cores = sorted(os.sched_getaffinity(0))
    return ({cores[1]}, {cores[0]}) if len(cores) >= 2 else (None, None)


def main(argv: list[str] | None = None) -> None:
    measure(parse_settings(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
