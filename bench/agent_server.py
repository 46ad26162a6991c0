"""The agent server against the least a Starlette app does for the same answers, read by aiohttp.

    python -m bench.agent_server [--quick]

Two servers run in subprocesses on one core, the client (aiohttp) in this process on the
other: the agent server (``serve`` of agent_server's scripted agent, its defaults but
``log_level='warning'``) and the reference Starlette app (bench/_reference_app.py) on the
same uvicorn loop and HTTP parser. Measured, rounds interleaved, medians printed with the
ratio agent server / reference:

- streaming: events per second of one ``/tasks/sendSubscribe`` of ``STREAM_EVENTS`` chunks
  (``stream N 0 0``), each line parsed, against the reference's ``/stream`` of as many lines;
- ``/tasks/send`` requests per second at 10 callers against the reference's ``/json``.

The same is measured on each loop and parser that is installed: asyncio with h11 (the
default), asyncio with httptools (``serve(..., http="httptools")``), and with the speed extra
(``pip install '.[speed]'``) uvloop with h11 (how ``serve`` runs then, by default) and uvloop
with httptools; the reference on the same loop and parser each time.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import anyio
import orjson

from agent_server.http.speedups import EventLoop, HttpParser, not_installed
from bench._support import client_core, median, pinning, python, rate, ratio, server_process

STREAM_EVENTS = 2000
SEND_CALLERS = 10
_JSON = {"content-type": "application/json"}
_AGENT_SERVER = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; import sys; "
    "loop, http = sys.argv[2:4]; "
    "serve(scripted_agent(), port=int(sys.argv[1]), log_level='warning', loop=loop, http=http)"
)
MODES: dict[str, tuple[EventLoop, HttpParser]] = {
    "asyncio + h11 (the default)": ("asyncio", "h11"),
    "asyncio + httptools (http='httptools')": ("asyncio", "httptools"),
    "uvloop + h11 (the default with the speed extra)": ("uvloop", "h11"),
    "uvloop + httptools (the speed extra, http='httptools')": ("uvloop", "httptools"),
}


async def _stream_rate(session: aiohttp.ClientSession, url: str, body: bytes, seconds: float) -> float:
    async def read() -> int:
        lines = 0
        async with session.post(url, data=body, headers=_JSON) as response:
            async for line in response.content:
                if line.strip():
                    orjson.loads(line)
                    lines += 1
        return lines

    return await rate(read, concurrency=1, count=20, seconds=seconds)


async def _send_rate(session: aiohttp.ClientSession, url: str, body: bytes, seconds: float) -> float:
    async def send() -> int:
        async with session.post(url, data=body, headers=_JSON) as response:
            orjson.loads(await response.read())
        return 1

    return await rate(send, concurrency=SEND_CALLERS, count=50_000, seconds=seconds)


async def measure(agent_url: str, reference_url: str, *, quick: bool) -> dict[str, tuple[float, float]]:
    """(agent server, reference) medians per figure."""
    rounds = 1 if quick else 3
    seconds = 0.5 if quick else 2.0
    events = 200 if quick else STREAM_EVENTS
    agent_stream = orjson.dumps({"message": {"parts": [{"text": f"stream {events} 0 0"}]}})
    reference_stream = orjson.dumps({"lines": events + 2})  # the agent's chunks and its two status lines
    send = orjson.dumps({"message": {"parts": [{"text": "echo hi"}]}})
    pairs: dict[str, tuple[Callable[[], Awaitable[float]], Callable[[], Awaitable[float]]]] = {}
    seen: dict[str, tuple[list[float], list[float]]] = {}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        pairs["stream events/s"] = (
            lambda: _stream_rate(session, agent_url + "/tasks/sendSubscribe", agent_stream, seconds),
            lambda: _stream_rate(session, reference_url + "/stream", reference_stream, seconds),
        )
        pairs[f"send req/s at {SEND_CALLERS}"] = (
            lambda: _send_rate(session, agent_url + "/tasks/send", send, seconds),
            lambda: _send_rate(session, reference_url + "/json", send, seconds),
        )
        for agent, reference in pairs.values():
            await agent()
            await reference()
        for number in range(rounds):
            for what, (agent, reference) in pairs.items():
                agent_values, reference_values = seen.setdefault(what, ([], []))
                if number % 2:
                    reference_values.append(await reference())
                    agent_values.append(await agent())
                else:
                    agent_values.append(await agent())
                    reference_values.append(await reference())
    return {what: (median(a), median(r)) for what, (a, r) in seen.items()}


def run(mode: str, *, quick: bool, tmp: Path) -> dict[str, tuple[float, float]]:
    loop, http = MODES[mode]
    agent_command = python("-c", _AGENT_SERVER, "{port}", loop, http)
    reference_command = python("-m", "bench._reference_app", "{port}", loop, http)
    with (
        server_process(agent_command, "/.well-known/agent.json", tmp / f"agent-{loop}-{http}.log") as agent_url,
        server_process(reference_command, "/ready", tmp / f"reference-{loop}-{http}.log") as reference_url,
    ):
        return anyio.run(lambda: measure(agent_url, reference_url, quick=quick))


def report(title: str, figures: dict[str, tuple[float, float]]) -> str:
    lines = [title, f"  {'measure':<22}{'agent server':>14}{'reference':>12}{'ratio':>8}"]
    for what, (agent, reference) in figures.items():
        lines.append(f"  {what:<22}{agent:>14.0f}{reference:>12.0f}{ratio(agent, reference):>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, client_core():
        print(f"agent server against the reference Starlette app, read by aiohttp; {pinning()}; medians of rounds")
        for mode, (loop, http) in MODES.items():
            missing = not_installed(loop, http)
            if missing is not None:
                print(f"{mode}: not measured, {missing}")
                continue
            print(report(mode + ":", run(mode, quick=args.quick, tmp=Path(tmp))), flush=True)


if __name__ == "__main__":
    main()
