"""A gateway replica killed with SIGKILL at a random point of a run, repeated: acknowledged events lost, time to close.

    python -m bench.replica_kill [--quick] [--runs 20] [--lease 1.0] [--seed N]

Two replicas (``python -m gateway gateway``) share one Redis (the test extra's ``valkey-server``,
AOF ``appendfsync always``) with ``lease_secs`` = ``--lease``. Each run starts a long turn on
replica A (the offline assistant hands off to the scripted agent: ``stream 400 0.02 0``, about
8 s), follows the run through replica B, and kills A with SIGKILL once A's client has read a
random number of events (1 to 60, from ``--seed``). Then it checks:

- acknowledged events lost: events A's client received (A sends an event only after its append
  returned) that B's follower did not (must be 0), and that B's events have no gap or duplicate;
- that B's follower ended with ``run_failed`` (``interrupted``), and the time from the kill to that;
- that the session takes a new turn through B at once (its time is printed too).

A new A is started for the next run. Every run is bounded in time; every process is stopped at
the end, on error and on Ctrl-C. The exit code is 1 if any event was lost or a check failed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._servers import Cores, placed, process, wait_ready
from tests.support.redis import LocalRedis

_AGENT = (
    "from agent_server import serve; from agent_server.testing import scripted_agent; "
    "import sys; serve(scripted_agent('stream'), port=int(sys.argv[1]), log_level='warning')"
)
_INTERRUPTED = "interrupted: the process stopped before the run ended"
_FOLLOW_S = 60.0
Out = Callable[[str], None]


@dataclass(frozen=True)
class Run:
    kill_after: int
    acknowledged: int
    lost: int
    gapless: bool
    closed_interrupted: bool
    close_s: float
    next_turn_s: float
    next_turn_ok: bool

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.gapless and self.closed_interrupted and self.next_turn_ok


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 runs")
    parser.add_argument("--runs", type=int, default=None, help="kills (default 20; --quick: 3)")
    parser.add_argument("--lease", type=float, default=1.0, help="lease_secs of the replicas (default 1.0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the kill points (default: random, printed)")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 20)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    try:
        results = measure(runs, args.lease, seed, lambda line: print(line, flush=True))
    except KeyboardInterrupt:
        print("interrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None
    if not all(run.ok for run in results):
        raise SystemExit(1)


def measure(runs: int, lease_s: float, seed: int, out: Out) -> list[Run]:
    kill_points = random.Random(seed).choices(range(1, 61), k=runs)
    out(f"{runs} kills, lease {lease_s:g} s, seed {seed}")
    results: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp, placed() as cores, ExitStack() as stack:
        directory = Path(tmp)
        redis = stack.enter_context(LocalRedis(directory / "redis", fsync="always"))
        agent_port = free_port()
        stack.enter_context(process([sys.executable, "-c", _AGENT, str(agent_port)], directory / "agent.log", cores))
        agent_url = f"http://127.0.0.1:{agent_port}"
        wait_ready("the agent server", f"{agent_url}/.well-known/agent.json", directory / "agent.log")
        config = _config(f"{redis.url}/0?prefix=kill{uuid.uuid4().hex[:8]}", lease_s, agent_url)
        b_url = stack.enter_context(_Gateway(directory, "B", config, cores)).url
        for number, kill_after in enumerate(kill_points, 1):
            with _Gateway(directory, f"A{number}", config, cores) as a:
                run = _kill_once(a, b_url, f"session-{number}", kill_after)
            results.append(run)
            out(
                f"run {number:>2}: killed after {run.kill_after:>2} events  acknowledged {run.acknowledged:>3}  "
                f"lost {run.lost}  gapless {run.gapless}  closed interrupted {run.closed_interrupted}  "
                f"close {run.close_s:5.2f} s  next turn {run.next_turn_s:5.2f} s "
                + ("ok" if run.next_turn_ok else "FAILED")
            )
    closes = [run.close_s for run in results]
    out(
        f"acknowledged events lost: {sum(run.lost for run in results)} of {sum(r.acknowledged for r in results)}; "
        f"runs passing every check: {sum(run.ok for run in results)} of {len(results)}\n"
        f"time from kill to close: min {min(closes):.2f} s, median {statistics.median(closes):.2f} s, "
        f"max {max(closes):.2f} s (lease {lease_s:g} s)"
    )
    return results


def _kill_once(a: _Gateway, b_url: str, session: str, kill_after: int) -> Run:
    acknowledged: list[dict[str, Any]] = []
    followed: list[dict[str, Any]] = []
    ended = threading.Event()
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", f"{a.url}/sessions/{session}/messages", json={"message": "stream 400 0.02 0"}) as turn:
            run_id = turn.headers["x-run-id"]

            def follow() -> None:
                with (
                    httpx.Client(timeout=_FOLLOW_S) as reader,
                    reader.stream("GET", f"{b_url}/runs/{run_id}/events?follow=1") as response,
                ):
                    followed.extend(orjson.loads(line) for line in response.iter_lines() if line)
                ended.set()

            follower = threading.Thread(target=follow, daemon=True)
            follower.start()
            for line in turn.iter_lines():
                if line:
                    acknowledged.append(orjson.loads(line))
                    if len(acknowledged) >= kill_after:
                        break
            a.kill()
            killed = time.monotonic()
            closed = ended.wait(timeout=_FOLLOW_S)
            close_s = time.monotonic() - killed
            follower.join(timeout=_FOLLOW_S)
        started = time.monotonic()
        answer = http.post(f"{b_url}/sessions/{session}/messages", json={"message": "stream 2 0 0", "stream": False})
        next_turn_s = time.monotonic() - started
    by_seq = {event["seq"]: event for event in followed}
    return Run(
        kill_after=kill_after,
        acknowledged=len(acknowledged),
        lost=sum(by_seq.get(event["seq"]) != event for event in acknowledged),
        gapless=[event["seq"] for event in followed] == list(range(len(followed))),
        closed_interrupted=closed and bool(followed) and followed[-1].get("error") == _INTERRUPTED,
        close_s=close_s,
        next_turn_s=next_turn_s,
        next_turn_ok=answer.status_code == 200 and answer.json().get("content", "").strip() == "chunk-0 chunk-1",
    )


def _config(spec: str, lease_s: float, agent_url: str) -> str:
    return (
        f'[stores]\nsessions = "{spec}"\nevents = "{spec}"\n\n[stores.redis]\nlease_secs = {lease_s}\n\n'
        '[[agents]]\nname = "assistant"\nhandoffs = ["stream"]\n\n'
        f'[[agents]]\nname = "stream"\nurl = "{agent_url}"\ndescription = "Streams chunks, for the stream command."\n'
    )


class _Gateway:
    """One replica process: started on entering, killed with ``kill`` or stopped on leaving."""

    def __init__(self, directory: Path, name: str, config: str, cores: Cores) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._path = directory / f"{name}.toml"
        self._path.write_text(
            f'[gateway]\nport = {port}\ndata_dir = "{directory / name}"\nlog_level = "warning"\n\n{config}',
            encoding="utf-8",
        )
        self._log = directory / f"{name}.log"
        self._cores = cores
        self._stack = ExitStack()

    def __enter__(self) -> _Gateway:
        command = [sys.executable, "-m", "gateway", "gateway", "--config", str(self._path)]
        self._child = self._stack.enter_context(process(command, self._log, self._cores))
        try:
            wait_ready(self._path.stem, f"{self.url}/health", self._log)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def kill(self) -> None:
        self._child.kill()
        self._child.wait()


if __name__ == "__main__":
    main()
