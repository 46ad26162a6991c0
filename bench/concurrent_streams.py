"""Many concurrent streaming tool calls through one gateway process at its defaults, against the same streams direct.

    python -m bench.concurrent_streams [--quick] [--streams 1000] [--agents N] [--chunks 20] [--interval 0.5]
                                       [--rounds 2] [--connect-timeout S]

Agent servers (agent_server's scripted agent; ``--agents``, by default one per 2,000 streams, so
the upstream is not what a burst measures) and one gateway (``python -m gateway gateway --config
FILE``) run as subprocesses on 127.0.0.1. The gateway's file sets where it listens, a temporary
``data_dir``, one streaming tool per agent server, and what holding the burst needs beyond the
defaults (bench/_scale.py): its connection cap (and with it the listen backlog) and its pool to
the agents, each the number of streams and a margin (never below the default); no
``SWITCHBOARD_*`` variable reaches it, so everything else is the default a user gets: SQLite
stores, the pool's timeouts, the log level. The agent servers and the reference relay get the
same caps for their share. An aiohttp client (no connection limit) opens every stream at once,
each ``stream CHUNKS INTERVAL 0`` (by default 20 chunks, one every 0.5 s: all streams are open
together, each about 10 s), and reads it to its end; stream ``k`` goes to agent server ``k mod N``:

- through the gateway: ``POST /tools/stream{k mod N}/call`` with ``{"input": ..., "stream":
  true}``, the call's NDJSON events;
- through the reference relay (``bench/_reference_relay.py``), in the gateway's place (``POST
  /relay/{k mod N}``): the least a relay on the gateway's stack does (Starlette on uvicorn
  with h11, aiohttp to the agent, lines passed through), so what the gateway spends beyond it
  is its own work;
- directly: agent server ``k mod N``'s ``/tasks/sendSubscribe``, its A2A stream lines (the
  baseline).

Descriptors: the gateway holds two per stream. The bench raises its own soft RLIMIT_NOFILE
to the hard one; where the hard one is too low for the burst, it raises it for itself and the
servers it starts where it may (root with CAP_SYS_RESOURCE), and otherwise stops with a
message saying what to raise and how many streams fit. The header prints the limits, the
caps, the kernel's ephemeral port range and listen backlog cap; the summary, the connection
attempts the kernel dropped on a full backlog and the client's own CPU time per burst (near
the wall time, the client is what bounds the figures).

``--connect-timeout`` sets the gateway's ``[peers] connect_timeout_secs`` (the header says when it is
not the default): that timeout also counts the time the gateway's event loop takes to come back to
a connection, which thousands of streams starting at once stretch past the default.

Rounds interleave the three paths, their order alternating; each burst gets new server processes
(warmed up with a few short streams), so its memory figures start from a process that served
nothing else. Each burst prints: calls that failed (an HTTP error, a terminal event other than
``agent_tool_completed`` or a final state other than ``completed``, a stream cut before its
end, or still open at the burst's deadline), with a count per reason; time to first progress
(request sent to the first ``agent_tool_progress`` event, or directly to the first non-final
line: both are the agent's ``working`` status) p50/p99/max over the streams that saw one; wall
time; CPU seconds, RSS before the burst and at its peak (sampled every 0.1 s) and per open
stream, and peak open file descriptors, of the gateway and of the agent server. The medians
over rounds end with the gateway/direct ratios. Where the machine has two cores, the servers
share one and the client has the other. Every loop is bounded in count and in time; the
servers are stopped at the end of each burst, on error and on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from agent_server.http.limits import ServerLimits, listen_backlog
from agent_server.http.loopback import free_port
from agent_server.http.speedups import DEFAULT_HTTP, HTTP_PARSERS, HttpParser
from bench._scale import (
    STREAMS_PER_AGENT,
    FileLimits,
    LimitTooLow,
    Scale,
    default_agents,
    ephemeral_ports,
    file_limits,
    listen_overflows,
    somaxconn as kernel_somaxconn,
)
from bench._support import stop, tail, wait_ready
from gateway.peers import PeerLimits

_DEFAULTS = PeerLimits()

_AGENT_SERVER = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "from agent_server import ServerLimits; import sys; "
    "serve(scripted_agent(), port=int(sys.argv[1]), log_level='warning', http=sys.argv[2], "
    "limits=ServerLimits(max_connections=int(sys.argv[3])))"
)
_TOOL = "stream"
"""Tool ``stream{i}`` calls agent server ``i``."""
_JSON = {"content-type": "application/json"}
_TERMINAL = ("agent_tool_completed", "agent_tool_terminated", "agent_tool_error")
_PATHS = ("gateway", "relay", "direct")
_PROGRESS = "progress"
_COMPLETED = ""
_SAMPLE_S = 0.1
_SETTLE_S = 0.5
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

Classify = Callable[[dict[str, Any]], str | None]
"""One decoded line: ``_PROGRESS``, ``_COMPLETED``, a failure reason (a terminal line), or None (go on)."""
Out = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    streams: int = 1000
    chunks: int = 20
    interval_s: float = 0.5
    rounds: int = 2
    http: HttpParser = DEFAULT_HTTP
    agents: int = 1
    connect_timeout_s: float = _DEFAULTS.connect_timeout_s
    """The gateway's ``[peers] connect_timeout_secs``: it counts the event loop's lag too, which a burst of
    thousands of starts at once stretches past the default."""

    @property
    def scale(self) -> Scale:
        return Scale(self.streams, self.agents)

    @property
    def message(self) -> str:
        return f"stream {self.chunks} {self.interval_s:g} 0"

    @property
    def deadline_s(self) -> float:
        """A burst's limit: three times a stream's own length plus the gateway's headers timeout and a margin."""
        return 3 * self.chunks * self.interval_s + _DEFAULTS.headers_timeout_s + 30.0


def _warmup(settings: Settings) -> Settings:
    """A few short streams, at least one to each agent server."""
    return Settings(streams=max(5, settings.agents), chunks=2, interval_s=0.01, agents=settings.agents)


@dataclass(frozen=True)
class Usage:
    """One server process during a burst: CPU seconds used, RSS (KiB) and open fds before it and at their peak."""

    cpu_s: float
    rss_before_kib: int
    rss_peak_kib: int
    fds_peak: int

    def kib_per_stream(self, streams: int) -> float:
        return (self.rss_peak_kib - self.rss_before_kib) / streams if streams else 0.0


@dataclass(frozen=True)
class Burst:
    path: str
    round: int
    streams: int
    first_progress_s: list[float]
    failures: Counter[str]
    max_open: int
    wall_s: float
    gateway: Usage
    """The process between the client and the agent server: the gateway, or the reference relay on that path."""
    agent: Usage
    """The agent servers together."""
    gateway_nofile: int
    log_errors: int
    client_cpu_s: float
    """This process's own CPU seconds during the burst: near ``wall_s``, the client bounds what it measured."""
    listen_overflows: int
    """Connection attempts the kernel dropped during the burst because a listen backlog was full."""

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile of the first-progress times (nan when no stream saw progress)."""
        values = sorted(self.first_progress_s)
        return values[max(0, math.ceil(q * len(values)) - 1)] if values else math.nan


@dataclass(frozen=True)
class _Placement:
    """Cores (None: not pinned) and RLIMIT_NOFILE (soft, hard) of the servers and of the client."""

    servers_cores: set[int] | None
    client_cores: set[int] | None
    files: FileLimits


@dataclass(frozen=True)
class _Servers:
    name: str
    """What runs between the client and the agent: "gateway" or "relay" (the reference relay)."""
    agent_urls: list[str]
    gateway_url: str
    agents: list[subprocess.Popen[bytes]]
    gateway: subprocess.Popen[bytes]
    gateway_log: Path


@dataclass
class _Stream:
    """What the client saw of one stream; ``failure`` None means it completed."""

    first_progress_s: float | None = None
    failure: str | None = "deadline"


class _Open:
    """How many streams are open (headers received, not ended) now and at most."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0

    def enter(self) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        self.now -= 1


class _Watch:
    """CPU time, RSS and open fds of some processes together, read before a burst and then at each sample."""

    def __init__(self, processes: list[subprocess.Popen[bytes]]) -> None:
        self.pids = [process.pid for process in processes]
        self.cpu_before = self._cpu_s()
        self.rss_before = self.rss_peak = sum(map(_rss_kib, self.pids))
        self.fds_peak = sum(map(_open_fds, self.pids))

    def _cpu_s(self) -> float:
        return sum(map(_cpu_s, self.pids))

    def sample(self) -> None:
        self.rss_peak = max(self.rss_peak, sum(map(_rss_kib, self.pids)))
        self.fds_peak = max(self.fds_peak, sum(map(_open_fds, self.pids)))

    def usage(self) -> Usage:
        return Usage(self._cpu_s() - self.cpu_before, self.rss_before, self.rss_peak, self.fds_peak)


def parse_settings(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=None, help="streams per burst (default 1000; --quick: 50)")
    parser.add_argument(
        "--agents",
        type=int,
        default=None,
        help=f"agent-server processes, streams assigned round-robin (default one per {STREAMS_PER_AGENT} streams)",
    )
    parser.add_argument("--chunks", type=int, default=None, help="chunks per stream (default 20; --quick: 5)")
    parser.add_argument("--interval", type=float, default=None, help="s between chunks (default 0.5; --quick: 0.1)")
    parser.add_argument("--rounds", type=int, default=2, help="gateway/direct rounds, interleaved (default 2)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 streams of 5 chunks every 0.1 s")
    parser.add_argument(
        "--http", choices=HTTP_PARSERS, default=DEFAULT_HTTP, help="every server's HTTP parser (default: %(default)s)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=_DEFAULTS.connect_timeout_s,
        help="the gateway's [peers] connect_timeout_secs (default: the gateway's, %(default)g s)",
    )
    args = parser.parse_args(argv)
    base = Settings(streams=50, chunks=5, interval_s=0.1) if args.quick else Settings()
    streams = base.streams if args.streams is None else args.streams
    settings = Settings(
        streams=streams,
        agents=default_agents(streams) if args.agents is None else args.agents,
        chunks=base.chunks if args.chunks is None else args.chunks,
        interval_s=base.interval_s if args.interval is None else args.interval,
        rounds=args.rounds,
        http=args.http,
        connect_timeout_s=args.connect_timeout,
    )
    if min(settings.streams, settings.agents, settings.chunks, settings.rounds) < 1 or settings.interval_s < 0:
        parser.error("--streams, --agents, --chunks and --rounds must be at least 1, --interval at least 0")
    if not settings.connect_timeout_s > 0:
        parser.error("--connect-timeout must be a positive number of seconds")
    return settings


def measure(settings: Settings, out: Out) -> list[Burst]:
    """Run the interleaved rounds and ``out`` each line of the report as soon as it is known."""
    with tempfile.TemporaryDirectory(prefix="bench-streams-") as tmp, _placed(settings.scale) as placement:
        out(_header(settings, placement))
        bursts = asyncio.run(_rounds(settings, Path(tmp), placement, out))
        out(_summary(bursts))
    return bursts


async def _rounds(settings: Settings, tmp: Path, placement: _Placement, out: Out) -> list[Burst]:
    out(_TABLE_HEAD)
    bursts: list[Burst] = []
    for number in range(1, settings.rounds + 1):
        for path in _PATHS if number % 2 else _PATHS[::-1]:
            folder = tmp / f"{number}-{path}"
            folder.mkdir()
            bursts.append(await _fresh_burst(path, number, settings, folder, placement))
            out(_row(bursts[-1]))
    return bursts


async def _fresh_burst(path: str, number: int, settings: Settings, tmp: Path, placement: _Placement) -> Burst:
    """New servers (started blocking: nothing else runs then), a warm-up, the burst; a server that died fails it."""
    with _servers(tmp, placement, settings, relay=path == "relay") as servers:
        await _burst(path, 0, _warmup(settings), servers)
        await asyncio.sleep(_SETTLE_S)
        burst = await _burst(path, number, settings, servers)
        for name, process in ((servers.name, servers.gateway), *(("agent server", agent) for agent in servers.agents)):
            if process.poll() is not None:
                raise RuntimeError(
                    f"the {name} exited with code {process.returncode} during round {number} {path}; "
                    f"the {servers.name}'s output:\n{tail(servers.gateway_log)}"
                )
    return burst


async def _burst(path: str, number: int, settings: Settings, servers: _Servers) -> Burst:
    """Open ``settings.streams`` streams at once on a fresh client, read each to its end or the deadline."""
    watches = {"gateway": _Watch([servers.gateway]), "agent": _Watch(servers.agents)}
    done = asyncio.Event()
    sampler = asyncio.create_task(_sample_until(done, list(watches.values())))
    is_open = _Open()
    if path == "gateway":
        urls = [f"{servers.gateway_url}/tools/{_TOOL}{i}/call" for i in range(len(servers.agents))]
        classify: Classify = _gateway_line
    elif path == "relay":
        urls = [f"{servers.gateway_url}/relay/{i}" for i in range(len(servers.agents))]
        classify = _direct_line
    else:
        urls = [f"{url}/tasks/sendSubscribe" for url in servers.agent_urls]
        classify = _direct_line
    deadline = asyncio.get_running_loop().time() + settings.deadline_s
    overflows_before = listen_overflows()
    client_before = _own_cpu_s()
    started = time.perf_counter()
    try:
        async with _session() as session:
            streams = await asyncio.gather(
                *(
                    _bounded(deadline, session, urls[k % len(urls)], _body(path, settings.message), classify, is_open)
                    for k in range(settings.streams)
                )
            )
        wall_s = time.perf_counter() - started
    finally:
        done.set()
        await sampler
    log = servers.gateway_log.read_text(errors="replace").splitlines()
    return Burst(
        path=path,
        round=number,
        streams=settings.streams,
        first_progress_s=[s.first_progress_s for s in streams if s.first_progress_s is not None],
        failures=Counter(s.failure for s in streams if s.failure is not None),
        max_open=is_open.peak,
        wall_s=wall_s,
        gateway=watches["gateway"].usage(),
        agent=watches["agent"].usage(),
        gateway_nofile=resource.prlimit(servers.gateway.pid, resource.RLIMIT_NOFILE)[0],
        log_errors=sum(" ERROR " in line or line.startswith("ERROR") for line in log),
        client_cpu_s=_own_cpu_s() - client_before,
        listen_overflows=listen_overflows() - overflows_before,
    )


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _sample_until(done: asyncio.Event, watches: list[_Watch]) -> None:
    while not done.is_set():
        with suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), _SAMPLE_S)
        for watch in watches:
            watch.sample()


def _session() -> aiohttp.ClientSession:
    """No connection limit, no timeout of aiohttp's own: every stream opens at once, the burst's deadline bounds it."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None))


def _body(path: str, message: str) -> bytes:
    """The gateway's tool call, or the A2A send the relay passes on unchanged and the agent server takes directly."""
    if path == "gateway":
        return orjson.dumps({"input": message, "stream": True})
    return orjson.dumps({"id": uuid.uuid4().hex, "message": {"parts": [{"text": message}]}})


async def _bounded(
    deadline: float, session: aiohttp.ClientSession, url: str, body: bytes, classify: Classify, is_open: _Open
) -> _Stream:
    """One stream read until it ends; one still open at ``deadline`` keeps the failure ``deadline``."""
    stream = _Stream()
    with suppress(TimeoutError):
        async with asyncio.timeout_at(deadline):
            await _read(session, url, body, classify, is_open, stream)
    return stream


async def _read(
    session: aiohttp.ClientSession, url: str, body: bytes, classify: Classify, is_open: _Open, stream: _Stream
) -> None:
    """Send, then read every line to the end of the body: a stream is whole only if it ends after its terminal line."""
    sent = time.perf_counter()
    outcome: str | None = None
    headers = False
    try:
        async with session.post(url, data=body, headers=_JSON) as response:
            if response.status != 200:
                stream.failure = f"http_{response.status}"
                return
            headers = True
            is_open.enter()
            try:
                async for line in response.content:
                    if not line.strip() or outcome is not None:
                        continue
                    try:
                        seen = classify(orjson.loads(line))
                    except orjson.JSONDecodeError:
                        seen = "malformed_line"
                    if seen == _PROGRESS:
                        if stream.first_progress_s is None:
                            stream.first_progress_s = time.perf_counter() - sent
                    elif seen is not None:
                        outcome = seen
            finally:
                is_open.leave()
    except (aiohttp.ClientError, OSError) as exc:
        stream.failure = "cut" if headers else f"no_response:{type(exc).__name__}"
        return
    stream.failure = "cut" if outcome is None else (outcome or None)


def _gateway_line(event: dict[str, Any]) -> str | None:
    kind = event.get("type")
    if kind == "agent_tool_progress":
        return _PROGRESS
    if kind == "agent_tool_completed":
        return _COMPLETED
    if kind in _TERMINAL:
        return f"{kind}:{event.get('reason') or event.get('kind')}"
    return None


def _direct_line(line: dict[str, Any]) -> str | None:
    if not line.get("final"):
        return _PROGRESS
    state = (line.get("status") or {}).get("state")
    return _COMPLETED if state == "completed" else f"final_{line.get('type')}:{state}"


# -- the servers ------------------------------------------------------------------------------


@contextmanager
def _servers(tmp: Path, placement: _Placement, settings: Settings, *, relay: bool) -> Iterator[_Servers]:
    """The agent servers, then the gateway with a tool each (or the reference relay); stopped when the block ends."""
    scale, http = settings.scale, settings.http
    with ExitStack() as stack:
        agent_urls: list[str] = []
        agents: list[subprocess.Popen[bytes]] = []
        for i in range(settings.agents):
            port = free_port()
            agent_urls.append(f"http://127.0.0.1:{port}")
            log = tmp / f"agent{i}.log"
            command = [sys.executable, "-c", _AGENT_SERVER, str(port), http, str(scale.agent_connections)]
            agents.append(stack.enter_context(_process(command, log, placement)))
            wait_ready(agent_urls[-1] + "/.well-known/agent.json", agents[-1], f"agent server {i}", log)
        gateway_port = free_port()
        gateway_url = f"http://127.0.0.1:{gateway_port}"
        if relay:
            backlog = str(listen_backlog(ServerLimits(max_connections=scale.server_connections)))
            relay_args = [str(gateway_port), ",".join(agent_urls), http, backlog]
            name, command, ready = ("relay", [sys.executable, "-m", "bench._reference_relay", *relay_args], "/ready")
        else:
            config = tmp / "gateway.toml"
            config.write_text(_gateway_config(gateway_port, tmp / "data", agent_urls, settings))
            name, command, ready = (
                "gateway",
                [sys.executable, "-m", "gateway", "gateway", "--config", str(config)],
                "/health",
            )
        gateway_log = tmp / f"{name}.log"
        gateway = stack.enter_context(_process(command, gateway_log, placement))
        wait_ready(gateway_url + ready, gateway, f"the {name}", gateway_log)
        yield _Servers(name, agent_urls, gateway_url, agents, gateway, gateway_log)


def _gateway_config(port: int, data_dir: Path, agent_urls: list[str], settings: Settings) -> str:
    """Where to listen, where the SQLite stores go, its parser, the caps the burst needs, the connect timeout
    asked for, a tool per agent server. The rest is the defaults."""
    scale, http = settings.scale, settings.http
    tools = "".join(
        f'\n[[tools]]\nname = "{_TOOL}{i}"\nagent = "{url}"\nmode = "streaming"\n' for i, url in enumerate(agent_urls)
    )
    return (
        f'[gateway]\nhost = "127.0.0.1"\nport = {port}\ndata_dir = "{data_dir}"\nhttp = "{http}"\n'
        f"max_connections = {scale.server_connections}\n\n"
        f"[peers]\nmax_connections = {scale.pool_connections}\nconnect_timeout_secs = {settings.connect_timeout_s:g}\n"
        f"{tools}"
    )


@contextmanager
def _process(command: list[str], log: Path, placement: _Placement) -> Iterator[subprocess.Popen[bytes]]:
    """A server on the servers' core with the bench's original fd limit, its output in ``log``, stopped at the end.

    The output goes to a file because a pipe nobody reads fills up and blocks the server.
    """

    def place() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, placement.files.servers)
        if placement.servers_cores:
            os.sched_setaffinity(0, placement.servers_cores)

    env = {key: value for key, value in os.environ.items() if not key.startswith("SWITCHBOARD")}
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=place,  # noqa: PLW1509 - the bench runs no threads yet
        )
        try:
            yield process
        finally:
            stop(process)


# -- this process -------------------------------------------------------------------------------


@contextmanager
def _placed(scale: Scale) -> Iterator[_Placement]:
    """Pin this process to its own core (where there are two) and raise its RLIMIT_NOFILE to what the burst needs.

    The servers are started with the bench's own limits, as servers started from the same shell
    would be, unless the burst needs more than the hard one: then, where this process may raise
    it, both get a hard limit that fits it, and otherwise this stops with a LimitTooLow saying
    what to raise.
    Affinity and limits are restored at the end (a test runs this in pytest).
    """
    own = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = file_limits(scale)
    affinity = os.sched_getaffinity(0)
    cores = sorted(affinity)
    servers_cores, client_cores = ({cores[0]}, {cores[1]}) if len(cores) >= 2 else (None, None)
    resource.setrlimit(resource.RLIMIT_NOFILE, files.client)
    if client_cores:
        os.sched_setaffinity(0, client_cores)
    try:
        yield _Placement(servers_cores, client_cores, files)
    finally:
        os.sched_setaffinity(0, affinity)
        resource.setrlimit(resource.RLIMIT_NOFILE, own)


def _rss_kib(pid: int) -> int:
    """VmRSS from /proc (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_s(pid: int) -> float:
    """User plus system CPU time from /proc/PID/stat (0 once the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


# -- the report ---------------------------------------------------------------------------------


_TABLE_HEAD = (
    f"{'round':<6}{'path':<8}{'ok':>5}{'failed':>7}{'open':>6}{'1st p50':>9}{'1st p99':>9}{'1st max':>9}{'wall s':>8}"
    f"{'gw cpu':>8}{'gw MiB':>8}{'peak':>7}{'KiB/str':>8}{'ag cpu':>8}{'ag MiB':>8}{'peak':>7}{'KiB/str':>8}"
    f"{'gw fds':>7}{'ag fds':>7}"
)


def _header(settings: Settings, placement: _Placement) -> str:
    if placement.servers_cores and placement.client_cores:
        servers, client = min(placement.servers_cores), min(placement.client_cores)
        pinning = f"gateway + agent servers on core {servers}, client on core {client}"
    else:
        pinning = "not pinned (fewer than 2 cores)"
    scale = settings.scale
    backlog = listen_backlog(ServerLimits(max_connections=scale.server_connections))
    cap = kernel_somaxconn()
    capped = f" (the kernel caps it at net.core.somaxconn {cap})" if cap is not None and cap < backlog else ""
    ports = ephemeral_ports()
    port_line = (
        f"ephemeral ports {ports[0]}-{ports[1]} ({ports[1] - ports[0] + 1}) for about "
        f"{scale.loopback_connections} loopback connections at once (client -> middle, middle -> agents)"
        if ports
        else "ephemeral port range unknown"
    )
    raised = " (hard limit raised by the bench)" if placement.files.raised_hard else ""
    return "\n".join(
        [
            f"concurrent streams: {settings.streams} at once, each '{settings.message}' ({settings.chunks} chunks "
            f"every {settings.interval_s:g} s), round-robin over {settings.agents} agent server(s); "
            f"{settings.rounds} rounds, gateway, relay and direct interleaved, new servers per burst; "
            f"deadline {settings.deadline_s:g} s per burst",
            f"gateway: python -m gateway gateway --config FILE, one streaming tool per agent server; set for the "
            f"burst: [gateway] max_connections {scale.server_connections} (listen backlog {backlog}{capped}), "
            f"[peers] max_connections {scale.pool_connections}, connect_timeout_secs {settings.connect_timeout_s:g}"
            f"{'' if settings.connect_timeout_s == _DEFAULTS.connect_timeout_s else ' (not the default)'}; "
            "every other setting default (SQLite stores in a "
            f"temporary data_dir, headers timeout {_DEFAULTS.headers_timeout_s:g} s, log level info)",
            "relay: python -m bench._reference_relay in its place (Starlette, uvicorn, aiohttp with no connection "
            f"limit, lines passed through; listen backlog {backlog}); direct: the agent servers' /tasks/sendSubscribe; "
            f"agent servers: max_connections {scale.agent_connections} each; every server parses HTTP with "
            f"{settings.http}",
            f"cores: {pinning}; {port_line}",
            f"RLIMIT_NOFILE soft/hard: servers {placement.files.servers[0]}/{placement.files.servers[1]}, "
            f"client {placement.files.client[0]}/{placement.files.client[1]}{raised} (aiohttp, no connection "
            "limit)",
            "1st: request sent -> first progress line, s (over the streams that saw one); open: streams open at once "
            "(client side); gw: the gateway, or the relay on its path; ag: the agent servers together; cpu: CPU s "
            "during the burst; MiB: RSS before the burst, peak during it; KiB/str: (peak - before) / open, for the "
            "server the path goes through last; fds: peak open fds",
        ]
    )


def _row(burst: Burst) -> str:
    gateway_kib = f"{burst.gateway.kib_per_stream(burst.max_open):>8.1f}" if burst.path != "direct" else f"{'-':>8}"
    agent_kib = f"{burst.agent.kib_per_stream(burst.max_open):>8.1f}" if burst.path == "direct" else f"{'-':>8}"
    return (
        f"{burst.round:<6}{burst.path:<8}{burst.streams - burst.failed:>5}{burst.failed:>7}{burst.max_open:>6}"
        f"{burst.percentile(0.5):>9.3f}{burst.percentile(0.99):>9.3f}{burst.percentile(1.0):>9.3f}{burst.wall_s:>8.2f}"
        f"{burst.gateway.cpu_s:>8.2f}{burst.gateway.rss_before_kib / 1024:>8.1f}"
        f"{burst.gateway.rss_peak_kib / 1024:>7.1f}"
        f"{gateway_kib}{burst.agent.cpu_s:>8.2f}{burst.agent.rss_before_kib / 1024:>8.1f}"
        f"{burst.agent.rss_peak_kib / 1024:>7.1f}{agent_kib}{burst.gateway.fds_peak:>7}{burst.agent.fds_peak:>7}"
    )


def _summary(bursts: list[Burst]) -> str:
    lines = [
        "failures per reason (and the peak open fds of the gateway, or of the relay on its path, against its soft "
        "limit; its log lines at ERROR; the client's CPU time; the kernel's listen overflows):"
    ]
    for burst in bursts:
        reasons = ", ".join(f"{reason} {count}" for reason, count in burst.failures.most_common()) or "none"
        fds = f"{burst.gateway.fds_peak} of {burst.gateway_nofile} fds"
        at_limit = ", AT THE LIMIT" if burst.gateway.fds_peak >= burst.gateway_nofile else ""
        state = f"{'relay' if burst.path == 'relay' else 'gateway'}: {fds}{at_limit}; {burst.log_errors} ERROR"
        client = f"client CPU {burst.client_cpu_s:.1f} s of {burst.wall_s:.1f} s wall"
        dropped = f"{burst.listen_overflows} connection attempts dropped on a full backlog"
        lines.append(f"  round {burst.round} {burst.path}: {reasons} ({state}; {client}; {dropped})")
    by_path = {path: [b for b in bursts if b.path == path] for path in _PATHS}
    lines.append(
        f"medians over {len(by_path['gateway'])} rounds:{'gateway':>13}{'relay':>10}{'direct':>10}"
        f"{'gw/relay':>10}{'gw/direct':>10}"
    )

    def median_line(what: str, value: Callable[[Burst], float], digits: int) -> str:
        gateway, relay, direct = (statistics.median(map(value, by_path[path])) for path in _PATHS)
        ratios = "".join(f"{gateway / base:>10.2f}" if base else f"{'-':>10}" for base in (relay, direct))
        return f"  {what:<25}{gateway:>12.{digits}f}{relay:>10.{digits}f}{direct:>10.{digits}f}{ratios}"

    def kib(path: str, usage: Callable[[Burst], Usage]) -> float:
        return statistics.median(usage(b).kib_per_stream(b.max_open) for b in by_path[path])

    lines += [
        median_line("failed calls", lambda b: b.failed, 0),
        median_line("first progress p50 s", lambda b: b.percentile(0.5), 3),
        median_line("first progress p99 s", lambda b: b.percentile(0.99), 3),
        median_line("wall s", lambda b: b.wall_s, 2),
        median_line("server CPU s (gw+agent)", lambda b: b.gateway.cpu_s + b.agent.cpu_s, 2),
        f"  {'KiB/stream':<25}{kib('gateway', lambda b: b.gateway):>12.1f}{kib('relay', lambda b: b.gateway):>10.1f}"
        f"{kib('direct', lambda b: b.agent):>10.1f}   RSS growth / open streams of the last server on each path",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    settings = parse_settings(argv)
    try:
        measure(settings, lambda line: print(line, flush=True))
    except LimitTooLow as exc:
        print(f"bench.concurrent_streams: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("interrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
