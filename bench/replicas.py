"""Gateway replicas on one Redis against one SQLite gateway: turns, streamed chunks and event-log appends per second.

    python -m bench.replicas [--quick] [--rounds 3] [--turns 300] [--streams 20] [--chunks 50] [--appends 3000]

Setups, each a fresh set of ``python -m gateway gateway`` processes: ``sqlite x1`` (one gateway,
the default SQLite stores: the baseline), and ``redis x1``, ``x2``, ``x3`` (1 to 3 replicas whose
sessions, events and registry are on one Redis, the ``valkey-server`` of the test extra, AOF
``appendfsync everysec``). The agent is the scripted agent server; the gateway's starting agent
is the offline assistant, so a turn costs the gateway and its stores, not a model. A client
sends to the replicas round-robin, request ``i`` to replica ``i mod n``:

- session turns/s: ``--turns`` turns (``stream: false``), 8 at a time, each session taking 5 turns;
- streamed chunks/s: ``--streams`` streaming tool calls at once, each ``--chunks`` chunks as fast as
  the agent makes them, counted as the ``agent_tool_progress`` chunk events the client reads;
- appends/s: in this process, the event log alone, SQLite file against Redis, 16 writers at once
  (measured with the x1 setups, once the gateways are stopped).

Rounds interleave the setups, their order rotating, and the medians over rounds are printed with
each setup's ratio to ``sqlite x1`` measured in the same run. Where there are two cores, the
servers (gateways, Redis, agent) share one and the client has the other: on this 2-core machine
the figures say what an operation costs and that nothing breaks, not how replicas scale. Every
failed request is counted; every process is stopped at the end of its setup, on error and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._servers import Cores, placed, process, wait_ready
from gateway.event_log import EventLog, SQLiteEventLog
from gateway.event_log.redis import RedisEventLog
from gateway.recording.events import Event, EventType
from tests.support.redis import LocalRedis

SETUPS = ("sqlite x1", "redis x1", "redis x2", "redis x3")
BASELINE = SETUPS[0]
_TURNS_AT_ONCE = 8
_TURNS_PER_SESSION = 5
_WRITERS = 16
_AGENT = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "import sys; serve(scripted_agent('stream'), port=int(sys.argv[1]), log_level='warning')"
)
Out = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    rounds: int = 3
    turns: int = 300
    streams: int = 20
    chunks: int = 50
    appends: int = 3000


@dataclass
class Figures:
    """One setup in one round: rates, and the requests that failed."""

    turns_per_s: float = 0.0
    chunks_per_s: float = 0.0
    appends_per_s: float = 0.0
    failures: list[str] = field(default_factory=list)


def parse_settings(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round, fewer turns, streams and appends")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument("--streams", type=int, default=None)
    parser.add_argument("--chunks", type=int, default=None)
    parser.add_argument("--appends", type=int, default=None)
    args = parser.parse_args(argv)
    base = Settings(rounds=1, turns=60, streams=5, chunks=20, appends=500) if args.quick else Settings()
    given = {k: v for k, v in vars(args).items() if k != "quick" and v is not None}
    return Settings(**{**base.__dict__, **given})


def measure(settings: Settings, out: Out) -> dict[str, list[Figures]]:
    results: dict[str, list[Figures]] = {setup: [] for setup in SETUPS}
    with tempfile.TemporaryDirectory(prefix="bench-replicas-") as tmp, placed() as cores:
        directory = Path(tmp)
        with (
            LocalRedis(directory / "redis", fsync="everysec") as redis,
            process([sys.executable, "-c", _AGENT, str(agent_port := free_port())], directory / "agent.log", cores),
        ):
            if cores.servers and redis.pid is not None:
                os.sched_setaffinity(redis.pid, cores.servers)
            agent_url = f"http://127.0.0.1:{agent_port}"
            wait_ready("the agent server", f"{agent_url}/.well-known/agent.json", directory / "agent.log")
            for round_number in range(1, settings.rounds + 1):
                shift = (round_number - 1) % len(SETUPS)
                for setup in SETUPS[shift:] + SETUPS[:shift]:
                    figures = _one(setup, settings, directory / f"{setup.replace(' ', '-')}-{round_number}",
                                   redis, agent_url, cores)  # fmt: skip
                    results[setup].append(figures)
                    out(
                        f"round {round_number} {setup:<10} turns/s {figures.turns_per_s:8.1f}  "
                        f"chunks/s {figures.chunks_per_s:8.1f}  appends/s {figures.appends_per_s:8.1f}  "
                        f"failed {len(figures.failures)}"
                    )
                    for failure in figures.failures[:3]:
                        out(f"    failure: {failure}")
    out(report(results))
    return results


def report(results: dict[str, list[Figures]]) -> str:
    def median(setup: str, pick: Callable[[Figures], float]) -> float:
        values = [pick(f) for f in results[setup] if pick(f) > 0]
        return statistics.median(values) if values else float("nan")

    lines = [
        "",
        f"medians over rounds; ratio = setup / {BASELINE}",
        f"  {'setup':<10}{'turns/s':>18}{'chunks/s':>20}{'appends/s':>20}{'failed':>8}",
    ]
    for setup in SETUPS:
        cells = []
        for pick in (lambda f: f.turns_per_s, lambda f: f.chunks_per_s, lambda f: f.appends_per_s):
            value, base = median(setup, pick), median(BASELINE, pick)
            cells.append("-" if math.isnan(value) else f"{value:>10.1f} ({value / base:4.2f})")
        failed = sum(len(f.failures) for f in results[setup])
        lines.append(f"  {setup:<10}{cells[0]:>18}{cells[1]:>20}{cells[2]:>20}{failed:>8}")
    lines.append("  appends/s: the event log alone, in the bench process, on the x1 setups (SQLite file; Redis)")
    return "\n".join(lines)


def _one(setup: str, settings: Settings, directory: Path, redis: LocalRedis, agent_url: str, cores: Cores) -> Figures:
    store, count = setup.split(" x")
    spec = f"{redis.url}/0?prefix=bench{uuid.uuid4().hex[:8]}" if store == "redis" else None
    directory.mkdir(parents=True)
    figures = Figures()
    with _gateways(int(count), directory, spec, agent_url, cores) as urls:
        figures.turns_per_s = anyio.run(_turns, urls, settings, figures.failures)
        figures.chunks_per_s = anyio.run(_streams, urls, settings, figures.failures)
    if count == "1":
        figures.appends_per_s = anyio.run(_appends, store, directory, spec, settings)
    return figures


async def _turns(urls: list[str], settings: Settings, failures: list[str]) -> float:
    sessions = max(1, settings.turns // _TURNS_PER_SESSION)
    limiter = anyio.Semaphore(_TURNS_AT_ONCE)
    counter = iter(range(settings.turns))
    async with httpx.AsyncClient(timeout=60) as http:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for session in range(sessions):
                group.start_soon(_session_turns, http, urls, f"s{session}", counter, limiter, failures)
        return settings.turns / (time.perf_counter() - started)


async def _session_turns(
    http: httpx.AsyncClient, urls: list[str], session: str, counter: Iterator[int], limiter: anyio.Semaphore,
    failures: list[str],
) -> None:  # fmt: skip
    for _ in range(_TURNS_PER_SESSION):
        index = next(counter, None)
        if index is None:
            return
        async with limiter:
            url = urls[index % len(urls)]
            try:
                answer = await http.post(
                    f"{url}/sessions/{session}/messages", json={"message": "hello", "stream": False}
                )
                if answer.status_code != 200:
                    failures.append(f"turn {answer.status_code}: {answer.text[:200]}")
            except httpx.HTTPError as exc:
                failures.append(f"turn: {type(exc).__name__}: {exc}")


async def _streams(urls: list[str], settings: Settings, failures: list[str]) -> float:
    counts = [0] * settings.streams
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=None)) as http:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index in range(settings.streams):
                group.start_soon(_stream, http, urls[index % len(urls)], settings.chunks, counts, index, failures)
        wall = time.perf_counter() - started
    return sum(counts) / wall


async def _stream(
    http: httpx.AsyncClient, url: str, chunks: int, counts: list[int], index: int, failures: list[str]
) -> None:
    body = {"input": f"stream {chunks} 0 0", "stream": True}
    last = None
    try:
        async with http.stream("POST", f"{url}/tools/stream/call", json=body) as response:
            async for line in response.aiter_lines():
                if not line:
                    continue
                event = orjson.loads(line)
                last = event["type"]
                counts[index] += event["type"] == "agent_tool_progress" and event.get("kind") == "artifact"
    except httpx.HTTPError as exc:
        failures.append(f"stream: {type(exc).__name__}: {exc}")
        return
    if last != "agent_tool_completed" or counts[index] != chunks:
        failures.append(f"stream ended with {last} after {counts[index]} of {chunks} chunks")


async def _appends(store: str, directory: Path, spec: str | None, settings: Settings) -> float:
    log: EventLog = RedisEventLog(spec) if spec is not None else SQLiteEventLog(directory / "appends.db")
    per_writer = max(1, settings.appends // _WRITERS)
    try:

        async def write(run_id: str) -> None:
            for n in range(per_writer):
                await log.append(Event.create(EventType.AGENT_TOOL_PROGRESS, run_id, chunk_index=n, text="x" * 40))

        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for writer in range(_WRITERS):
                group.start_soon(write, f"run-{store}-{writer}")
        return per_writer * _WRITERS / (time.perf_counter() - started)
    finally:
        await log.aclose()


@contextmanager
def _gateways(count: int, directory: Path, spec: str | None, agent_url: str, cores: Cores) -> Iterator[list[str]]:
    stores = f'[stores]\nsessions = "{spec}"\nevents = "{spec}"\n\n' if spec is not None else ""
    with ExitStack() as stack:
        urls = []
        for index in range(count):
            port = free_port()
            config = directory / f"gateway-{index}.toml"
            config.write_text(
                f'[gateway]\nport = {port}\ndata_dir = "{directory / f"data-{index}"}"\nlog_level = "warning"\n\n'
                f'{stores}[[tools]]\nname = "stream"\nagent = "{agent_url}"\nmode = "streaming"\n',
                encoding="utf-8",
            )
            log = directory / f"gateway-{index}.log"
            command = [sys.executable, "-m", "gateway", "gateway", "--config", str(config)]
            stack.enter_context(process(command, log, cores))
            urls.append(f"http://127.0.0.1:{port}")
        for index, url in enumerate(urls):
            wait_ready(f"gateway {index}", f"{url}/health", directory / f"gateway-{index}.log")
        yield urls


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(argv)
    try:
        measure(settings, lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("interrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
