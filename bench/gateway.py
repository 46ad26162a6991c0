"""The gateway against direct calls to the same agent server: the service relaying a stream, sync calls, added latency.

    python -m bench.gateway [--quick]

One agent server (agent_server's scripted agent, ``log_level='warning'``) runs in a subprocess
with two ``switchboard gateway`` processes (``python -m gateway gateway --config FILE``), all on
the servers' core; the clients run in this process on the other. Rounds interleave what is
compared; medians are printed with their ratio to the direct figure of the same run.

- **relay**: chunks per second of one streaming tool call (``POST /tools/stream/call`` with
  ``stream: true``, ``stream CHUNKS 0 0``) read with httpx, every NDJSON event parsed, through
  the gateway at its defaults (SQLite event log, INFO logs: its file sets only where it listens
  and its ``data_dir``) and through one with the memory log and WARNING logs; against a direct
  httpx read of the agent server's ``/tasks/sendSubscribe`` (every line parsed into its event).
  The reference relay (``bench/_reference_relay.py``: Starlette on uvicorn, aiohttp to the agent,
  lines passed through, no run or log) on the same core is read the same way: the most a relay on
  the gateway's stack gets in this layout, where it shares its core with the agent server. Each
  gateway's rate is also given as a ratio to the reference relay's, of the same rounds.
- **sync calls**: ``Gateway.call_tool`` calls per second in this process (memory log) at
  ``CALLERS`` concurrent callers, against direct aiohttp ``/tasks/send`` calls (the Task parsed)
  on one session.
- **added latency**: p50 and p99 of one caller's sync calls, in this process, through a
  ``Gateway`` with the memory log and with the SQLite log, minus direct httpx calls' (one client).
"""

from __future__ import annotations

import argparse
import functools
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import httpx
import orjson

from bench._support import client_core, latencies, median, percentile, pinning, python, rate, ratio, server_process
from gateway import Gateway, SQLiteEventLog
from protocol import NDJSONDecoder, Task, parse_stream_event

STREAM_CHUNKS = 2000
_RELAY = "reference relay"
CALLERS = (50, 200)
_JSON = {"content-type": "application/json"}
_AGENT_SERVER = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "import sys; serve(scripted_agent(), port=int(sys.argv[1]), log_level='warning')"
)


def _gateway_config(data_dir: Path, agent_url: str, *, lean: bool) -> str:
    """Its ``data_dir`` and one streaming tool (lean: the memory stores and WARNING logs); the rest, the defaults."""
    settings = 'log_level = "warning"\n\n[stores]\nevents = "memory"\nsessions = "memory"\n' if lean else ""
    return (
        f'[gateway]\nhost = "127.0.0.1"\ndata_dir = "{data_dir}"\n{settings}\n'
        f'[[tools]]\nname = "stream"\nagent = "{agent_url}"\nmode = "streaming"\n'
    )


@contextmanager
def _relays(agent_url: str, tmp: Path) -> Iterator[dict[str, str]]:
    """The two gateway services and the reference relay (name -> URL), stopped when the block ends."""
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        for number, (name, lean) in enumerate((("defaults (SQLite log, INFO)", False), ("memory log, WARNING", True))):
            config = tmp / f"gateway-{number}.toml"
            config.write_text(_gateway_config(tmp / f"data-{number}", agent_url, lean=lean))
            command = python("-m", "gateway", "gateway", "--config", str(config), "--port", "{port}")
            urls[name] = stack.enter_context(server_process(command, "/health", tmp / f"gateway-{number}.log"))
        relay_command = python("-m", "bench._reference_relay", "{port}", agent_url)
        urls[_RELAY] = stack.enter_context(server_process(relay_command, "/ready", tmp / "relay.log"))
        yield urls


async def relay(agent_url: str, relays: dict[str, str], *, quick: bool) -> dict[str, tuple[float, float]]:
    """(through it, direct) chunks/s medians, per relay (each gateway, the reference relay); the order rotating."""
    rounds = 1 if quick else 3
    chunks = 200 if quick else STREAM_CHUNKS
    text = f"stream {chunks} 0 0"
    direct_body = orjson.dumps({"message": {"parts": [{"text": text}]}})
    tool_body = orjson.dumps({"input": text, "stream": True})
    async with httpx.AsyncClient(timeout=60.0) as client:

        async def lines(url: str, body: bytes, count: Callable[[Any], bool]) -> float:
            decoder = NDJSONDecoder()
            seen = 0
            started = anyio.current_time()
            async with client.stream("POST", url, content=body, headers=_JSON) as response:
                async for chunk in response.aiter_raw():
                    for line in decoder.feed(chunk):
                        seen += count(line)
            return seen / (anyio.current_time() - started)

        def direct() -> Awaitable[float]:
            return lines(
                agent_url + "/tasks/sendSubscribe", direct_body, lambda line: _is_chunk(parse_stream_event(line))
            )

        def through(url: str) -> Awaitable[float]:
            return lines(url + "/tools/stream/call", tool_body, _is_progress)

        def relayed(url: str) -> Awaitable[float]:
            return lines(url + "/relay", direct_body, lambda line: _is_chunk(parse_stream_event(line)))

        reads: dict[str, Callable[[], Awaitable[float]]] = {"direct": direct}
        reads.update(
            {name: functools.partial(relayed if name == _RELAY else through, url) for name, url in relays.items()}
        )
        seen: dict[str, list[float]] = {name: [] for name in reads}
        for read in reads.values():
            await read()
        for number in range(rounds):
            order = list(reads.items())
            for name, read in order[number % len(order) :] + order[: number % len(order)]:
                seen[name].append(await read())
    direct_median = median(seen.pop("direct"))
    return {name: (median(values), direct_median) for name, values in seen.items()}


def _is_chunk(event: object) -> bool:
    return getattr(event, "type", None) == "artifact"


def _is_progress(event: Any) -> bool:
    return bool(event["type"] == "agent_tool_progress" and event.get("kind") == "artifact")


async def sync_calls(agent_url: str, *, quick: bool) -> dict[int, tuple[float, float]]:
    """(Gateway.call_tool, direct aiohttp) calls/s medians per number of callers."""
    rounds = 1 if quick else 3
    seconds = 0.5 if quick else 2.0
    send_body = orjson.dumps({"message": {"parts": [{"text": "echo hi"}]}})
    figures: dict[int, tuple[list[float], list[float]]] = {callers: ([], []) for callers in CALLERS}
    connector = aiohttp.TCPConnector(limit=0)
    async with (
        Gateway() as gateway,
        aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session,
    ):
        gateway.add_agent_tool("echo", agent_url)

        async def through() -> int:
            await gateway.call_tool("echo", "echo hi")
            return 1

        async def direct() -> int:
            async with session.post(agent_url + "/tasks/send", data=send_body, headers=_JSON) as response:
                Task.model_validate(orjson.loads(await response.read()))
            return 1

        await rate(through, concurrency=10, count=100, seconds=1.0)
        await rate(direct, concurrency=10, count=100, seconds=1.0)
        for number in range(rounds):
            for callers in CALLERS:
                gateway_values, direct_values = figures[callers]
                pair = [(gateway_values, through), (direct_values, direct)]
                for values, op in pair if number % 2 == 0 else reversed(pair):
                    values.append(await rate(op, concurrency=callers, count=10**6, seconds=seconds))
    return {callers: (median(g), median(d)) for callers, (g, d) in figures.items()}


async def added_latency(agent_url: str, tmp: Path, *, quick: bool) -> dict[str, tuple[float, float]]:
    """(p50, p99) ms added to one caller's sync call, per event log, against direct httpx."""
    rounds = 1 if quick else 3
    count = 200 if quick else 1000
    send_body = orjson.dumps({"message": {"parts": [{"text": "echo hi"}]}})
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(httpx.AsyncClient(timeout=60.0))
        gateways = {
            "memory log": await stack.enter_async_context(Gateway()),
            "SQLite log": await stack.enter_async_context(Gateway(SQLiteEventLog(tmp / "latency.db"))),
        }
        ops: dict[str, Callable[[], Awaitable[int]]] = {}
        for name, gateway in gateways.items():
            gateway.add_agent_tool("echo", agent_url)

            async def through(gateway: Gateway = gateway) -> int:
                await gateway.call_tool("echo", "echo hi")
                return 1

            ops[name] = through

        async def direct() -> int:
            response = await client.post(agent_url + "/tasks/send", content=send_body, headers=_JSON)
            Task.model_validate(orjson.loads(response.content))
            return 1

        ops["direct"] = direct
        took: dict[str, list[float]] = {name: [] for name in ops}
        for op in ops.values():
            await latencies(op, count=50, seconds=2.0)
        for number in range(rounds):
            order = list(ops.items())
            for name, op in order if number % 2 == 0 else reversed(order):
                took[name] += await latencies(op, count=count, seconds=10.0)
    base = {q: percentile(took["direct"], q) for q in (0.5, 0.99)}
    return {
        name: tuple((percentile(values, q) - base[q]) * 1000 for q in (0.5, 0.99))  # type: ignore[misc]
        for name, values in took.items()
        if name != "direct"
    }


async def measure(agent_url: str, relays: dict[str, str], tmp: Path, *, quick: bool) -> list[str]:
    out = [f"  relay, chunks/s of one {'200' if quick else STREAM_CHUNKS}-chunk stream read with httpx:"]
    out.append(f"    {'through':<30}{'through it':>12}{'direct':>10}{'ratio':>8}")
    relayed = await relay(agent_url, relays, quick=quick)
    for name, (through, direct) in relayed.items():
        out.append(f"    {name:<30}{through:>12.0f}{direct:>10.0f}{ratio(through, direct):>8}")
    reference = relayed[_RELAY][0]
    out.append(f"    against the {_RELAY}:")
    for name, (through, _) in relayed.items():
        if name != _RELAY:
            out.append(f"      {name:<28}{ratio(through, reference):>30}")
    out.append("  sync calls/s, Gateway.call_tool (memory log) against direct aiohttp:")
    out.append(f"    {'callers':<30}{'through it':>12}{'direct':>10}{'ratio':>8}")
    for callers, (through, direct) in (await sync_calls(agent_url, quick=quick)).items():
        out.append(f"    {callers:<30}{through:>12.0f}{direct:>10.0f}{ratio(through, direct):>8}")
    out.append("  latency added to a sync call at 1 caller (Gateway.call_tool against direct httpx), ms:")
    out.append(f"    {'event log':<30}{'p50':>12}{'p99':>10}")
    for name, (p50, p99) in (await added_latency(agent_url, tmp, quick=quick)).items():
        out.append(f"    {name:<30}{p50:>+12.2f}{p99:>+10.2f}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_dir, client_core():
        tmp = Path(tmp_dir)
        print(f"the gateway against direct calls to the same agent server; {pinning()}; medians of rounds")
        agent = python("-c", _AGENT_SERVER, "{port}")
        with (
            server_process(agent, "/.well-known/agent.json", tmp / "agent.log") as agent_url,
            _relays(agent_url, tmp) as relays,
        ):
            print("\n".join(anyio.run(lambda: measure(agent_url, relays, tmp, quick=args.quick))), flush=True)


if __name__ == "__main__":
    main()
