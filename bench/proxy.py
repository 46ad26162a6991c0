"""The gateway's agent proxy (``/proxy/{name}``) against calling the same agent directly, on each HTTP binding.

    python -m bench.proxy [--quick]

One upstream process serves ``examples/echo.py:agent`` (``switchboard serve``: JSON-RPC,
HTTP+JSON and A2A-NDJSON on one port). One ``switchboard gateway`` process (memory stores,
WARNING logs) registers it as the remote agent ``echo``, so it is proxied at
``/proxy/echo``; each call through it is a run in the gateway's event log. Both processes run
on the servers' core, the client in this process on the other.

The client sends one message per call (``SendMessage`` over JSON-RPC 1.0 and HTTP+JSON,
``tasks/send`` over A2A-NDJSON) with aiohttp (one pool of ``CALLERS`` connections: httpx's pool
would be what 50 callers measure), once to the agent and once through the proxy, and
checks each answer is the completed echo. Each round measures, for every binding, the latency
of calls made one at a time (direct and proxied, interleaved) and the calls per second of
``CALLERS`` callers at once; the report gives the medians over rounds: the added latency at
p50 and p99 and the proxy's calls/s with its ratio to the direct calls of the same round.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import anyio
import orjson

from bench._support import client_core, latencies, percentile, pinning, python, rate, server_process

CALLERS = 50
CARD_PATH = "/.well-known/agent-card.json"
BINDINGS = ("jsonrpc", "rest", "ndjson")
V1 = {"A2A-Version": "1.0", "content-type": "application/json"}


@dataclass(frozen=True)
class Settings:
    rounds: int
    seconds: float
    calls: int


@dataclass
class Figures:
    """One binding's figures, one value per round."""

    added_p50_ms: list[float] = field(default_factory=list)
    added_p99_ms: list[float] = field(default_factory=list)
    proxy_per_s: list[float] = field(default_factory=list)
    direct_per_s: list[float] = field(default_factory=list)


def _gateway_config(data_dir: Path, upstream: str) -> str:
    return (
        f'[gateway]\nhost = "127.0.0.1"\ndata_dir = "{data_dir}"\nlog_level = "warning"\n\n'
        f'[stores]\nevents = "memory"\nsessions = "memory"\n\n'
        f'[[agents]]\nname = "echo"\nurl = "{upstream}"\n'
    )


def call(client: aiohttp.ClientSession, base: str, binding: str) -> Callable[[], Awaitable[int]]:
    """One call of the echo agent at ``base`` over ``binding``; it fails unless the answer is the completed echo."""

    async def once() -> int:
        text = uuid.uuid4().hex
        message = {"role": "ROLE_USER", "messageId": text, "parts": [{"text": text}]}
        if binding == "jsonrpc":
            url, body = base, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        elif binding == "rest":
            url, body = f"{base}/a2a/rest/message:send", {"message": message}
        else:
            url = f"{base}/tasks/send"
            body = {"id": text, "message": {"role": "user", "parts": [{"type": "text", "text": text}]}}
        async with client.post(url, data=orjson.dumps(body), headers=V1) as answer:
            raw = await answer.read()
        reply = orjson.loads(raw) if answer.status == 200 else {}
        task = reply.get("result", reply).get("task", reply) if binding != "ndjson" else reply
        if (task.get("status") or {}).get("state") not in ("TASK_STATE_COMPLETED", "completed") or (
            task["artifacts"][0]["parts"][0]["text"] != text
        ):
            raise RuntimeError(f"{binding} at {base}: {answer.status} {raw[:300]!r}")
        return 1

    return once


async def measure(settings: Settings, upstream: str, gateway: str, out: Callable[[str], None]) -> dict[str, Figures]:
    figures = {binding: Figures() for binding in BINDINGS}
    connector = aiohttp.TCPConnector(limit=CALLERS)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as client:
        direct = {binding: call(client, upstream, binding) for binding in BINDINGS}
        proxied = {binding: call(client, f"{gateway}/proxy/echo", binding) for binding in BINDINGS}
        for binding in BINDINGS:  # warm-up: the gateway reads the card and opens its connections
            await direct[binding]()
            await proxied[binding]()
        for round_ in range(settings.rounds):
            for binding in BINDINGS:
                got = figures[binding]
                pair = [("direct", direct[binding]), ("proxy", proxied[binding])]
                if round_ % 2:
                    pair.reverse()
                took: dict[str, list[float]] = {}
                per_s: dict[str, float] = {}
                for name, op in pair:
                    took[name] = await latencies(op, count=settings.calls, seconds=settings.seconds)
                for name, op in pair:
                    count = settings.calls * 5
                    per_s[name] = await rate(op, concurrency=CALLERS, count=count, seconds=settings.seconds)
                for q, values in ((0.5, got.added_p50_ms), (0.99, got.added_p99_ms)):
                    values.append((percentile(took["proxy"], q) - percentile(took["direct"], q)) * 1000)
                got.proxy_per_s.append(per_s["proxy"])
                got.direct_per_s.append(per_s["direct"])
                out(
                    f"round {round_ + 1} {binding:<8} added p50 {got.added_p50_ms[-1]:5.2f} ms "
                    f"p99 {got.added_p99_ms[-1]:5.2f} ms  at {CALLERS} callers: proxy {per_s['proxy']:6.0f}/s "
                    f"direct {per_s['direct']:6.0f}/s ({per_s['proxy'] / per_s['direct']:.2f})"
                )
    return figures


def report(figures: dict[str, Figures]) -> str:
    lines = [f"{'binding':<9}{'added p50 ms':>13}{'added p99 ms':>13}{'proxy calls/s':>15}{'direct':>9}{'ratio':>7}"]
    for binding, got in figures.items():
        ratios = [p / d for p, d in zip(got.proxy_per_s, got.direct_per_s, strict=True)]
        lines.append(
            f"{binding:<9}{statistics.median(got.added_p50_ms):>13.2f}{statistics.median(got.added_p99_ms):>13.2f}"
            f"{statistics.median(got.proxy_per_s):>15.0f}{statistics.median(got.direct_per_s):>9.0f}"
            f"{statistics.median(ratios):>7.2f}"
        )
    return "\n".join(lines)


def settings_for(quick: bool) -> Settings:
    return Settings(rounds=2, seconds=1.0, calls=50) if quick else Settings(rounds=6, seconds=3.0, calls=500)


def run(settings: Settings, out: Callable[[str], None] = print) -> dict[str, Figures]:
    with tempfile.TemporaryDirectory() as tmp_dir, client_core(), ExitStack() as stack:
        tmp = Path(tmp_dir)
        upstream_command = python(
            "-m", "gateway", "serve", "examples/echo.py:agent", "--port", "{port}", "--log-level", "warning"
        )
        upstream = stack.enter_context(server_process(upstream_command, CARD_PATH, tmp / "upstream.log"))
        config = tmp / "gateway.toml"
        config.write_text(_gateway_config(tmp / "data", upstream))
        gateway_command = python("-m", "gateway", "gateway", "--config", str(config), "--port", "{port}")
        gateway = stack.enter_context(server_process(gateway_command, "/health", tmp / "gateway.log"))
        out(f"the echo agent called directly and through /proxy/echo; {CALLERS} callers for calls/s; {pinning()}")
        return anyio.run(measure, settings, upstream, gateway, out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two short rounds")
    args = parser.parse_args(argv)
    print(report(run(settings_for(args.quick))), flush=True)


if __name__ == "__main__":
    main()
