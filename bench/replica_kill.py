"""A gateway killed with SIGKILL at a random point of a run, repeated: runs resumed, events lost, tasks run twice.

    python -m bench.replica_kill [--quick] [--runs 20] [--lease 1.0] [--seed N] [--sqlite]

Two replicas (``python -m gateway gateway``) share one Redis (the test extra's ``valkey-server``,
AOF ``appendfsync always``) with ``lease_secs`` = ``--lease``. Each run starts a long turn on
replica A (the offline assistant hands off to the scripted agent: ``stream 400 0.02 0``, about
8 s), follows the run through replica B, and kills A with SIGKILL once A's client has read a
random number of events (1 to 60, from ``--seed``). B takes the run over. Then it checks:

- acknowledged events lost: events A's client received (A sends an event only after its append
  returned) that B's follower did not (must be 0), and that B's events have no gap or duplicate;
- that the run was resumed (``run_resumed``) and ended ``run_completed`` with the whole answer,
  and the time from the kill to ``run_resumed``;
- remote tasks started twice: the agent server (a process of its own) writes each task id its
  code begins on to a file; a task id in it twice is a task the takeover sent again (must be 0);
- that the session takes a new turn through B at once (its time is printed too).

A new A is started for the next run. With ``--sqlite``, one gateway on SQLite files instead:
killed the same way, then started again on the same files, and the run followed through it.
Every run is bounded in time; every process is stopped at the end, on error and on Ctrl-C.
The exit code is 1 if any event was lost or a check failed.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import orjson

from agent_server.http.loopback import free_port
from bench._servers import Cores, placed, process, wait_ready
from tests.support.redis import LocalRedis

_AGENT = """
import sys
from agent_server import HostedAgent, serve
from agent_server.testing import scripted_agent
inner = scripted_agent("stream")
starts = open(sys.argv[2], "a", buffering=1)
async def counted(ctx):
    starts.write(ctx.task_id + "\\n")
    async for item in inner.handler(ctx):
        yield item
serve(HostedAgent("stream", counted, description=inner.description), port=int(sys.argv[1]), log_level="warning")
"""
_ANSWER = "".join(f"chunk-{index} " for index in range(400))
_FOLLOW_S = 60.0
Out = Callable[[str], None]


@dataclass(frozen=True)
class Run:
    kill_after: int
    acknowledged: int
    lost: int
    gapless: bool
    resumed: bool
    resumed_s: float
    ending: str
    """How the run ended as followed: its last event's type and the number of ``run_resumed`` events in it."""
    next_turn_s: float
    next_turn_ok: bool

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.gapless and self.resumed and self.next_turn_ok


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 runs")
    parser.add_argument("--runs", type=int, default=None, help="kills (default 20; --quick: 3)")
    parser.add_argument("--lease", type=float, default=1.0, help="lease_secs of the replicas (default 1.0)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the kill points (default: random, printed)")
    parser.add_argument("--sqlite", action="store_true", help="one gateway on SQLite, restarted after each kill")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 20)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    try:
        ok = measure(runs, args.lease, seed, lambda line: print(line, flush=True), sqlite=args.sqlite)
    except KeyboardInterrupt:
        print("interrupted: the servers are stopped", file=sys.stderr)
        raise SystemExit(130) from None
    if not ok:
        raise SystemExit(1)


def measure(runs: int, lease_s: float, seed: int, out: Out, *, sqlite: bool = False) -> bool:
    """Kill and check ``runs`` times; True when every run passed every check and no task ran twice."""
    kill_points = random.Random(seed).choices(range(1, 61), k=runs)
    setup = "one gateway on SQLite, restarted" if sqlite else f"lease {lease_s:g} s"
    out(f"{runs} kills, {setup}, seed {seed}")
    results: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-kill-") as tmp, placed() as cores, ExitStack() as stack:
        directory = Path(tmp)
        starts = directory / "starts.txt"
        agent_port = free_port()
        agent = [sys.executable, "-c", _AGENT, str(agent_port), str(starts)]
        stack.enter_context(process(agent, directory / "agent.log", cores))
        agent_url = f"http://127.0.0.1:{agent_port}"
        wait_ready("the agent server", f"{agent_url}/.well-known/agent.json", directory / "agent.log")
        if sqlite:
            config, b_url = _config("", lease_s, agent_url), None
        else:
            redis = stack.enter_context(LocalRedis(directory / "redis", fsync="always"))
            config = _config(f"{redis.url}/0?prefix=kill{uuid.uuid4().hex[:8]}", lease_s, agent_url)
            b_url = stack.enter_context(_Gateway(directory, "B", config, cores)).url
        for number, kill_after in enumerate(kill_points, 1):
            name = "G" if sqlite else f"A{number}"
            # the survivor: B, or the same gateway started again on its files
            survivor = partial(_Gateway, directory, name, config, cores) if b_url is None else partial(_Up, b_url)
            with _Gateway(directory, name, config, cores) as a:
                run = _kill_once(a, survivor, f"session-{number}", kill_after)
            results.append(run)
            out(
                f"run {number:>2}: killed after {run.kill_after:>2} events  acknowledged {run.acknowledged:>3}  "
                f"lost {run.lost}  gapless {run.gapless}  resumed {run.resumed}  "
                f"kill to resumed {run.resumed_s:5.2f} s  next turn {run.next_turn_s:5.2f} s "
                + ("ok" if run.next_turn_ok else "FAILED")
                + ("" if run.resumed else f"  ({run.ending})")
            )
        twice = _started_twice(starts)
    resumed = [run.resumed_s for run in results if run.resumed]
    out(
        f"runs resumed: {len(resumed)} of {len(results)}; "
        f"acknowledged events lost: {sum(run.lost for run in results)} of {sum(r.acknowledged for r in results)}; "
        f"remote tasks started twice: {twice}; runs passing every check: {sum(run.ok for run in results)} of "
        f"{len(results)}\n"
        + (
            f"time from kill to resumed: min {min(resumed):.2f} s, median {statistics.median(resumed):.2f} s, "
            f"max {max(resumed):.2f} s" + ("" if sqlite else f" (lease {lease_s:g} s)")
            if resumed
            else "no run was resumed"
        )
    )
    return twice == 0 and all(run.ok for run in results)


def _started_twice(starts: Path) -> int:
    """The task ids the agent server's code began on more than once."""
    task_ids = starts.read_text(encoding="utf-8").split() if starts.exists() else []
    return sum(count > 1 for count in Counter(task_ids).values())


class _Up:
    """A gateway already running (replica B), entered like a ``_Gateway`` that is started."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> _Up:
        return self

    def __exit__(self, *exc: object) -> None:
        """It stays up for the next run."""


def _kill_once(a: _Gateway, survivor: Callable[[], _Gateway | _Up], session: str, kill_after: int) -> Run:
    """Kill A mid-run; through the survivor (B, or A started again), follow the run to its end, then a next turn."""
    acknowledged: list[dict[str, Any]] = []
    followed: list[dict[str, Any]] = []
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", f"{a.url}/sessions/{session}/messages", json={"message": "stream 400 0.02 0"}) as turn:
            run_id = turn.headers["x-run-id"]
            for line in turn.iter_lines():
                if line:
                    acknowledged.append(orjson.loads(line))
                    if len(acknowledged) >= kill_after:
                        break
            a.kill()
            killed = time.time()
        with survivor() as b, httpx.Client(timeout=_FOLLOW_S) as reader:
            response = reader.get(f"{b.url}/runs/{run_id}/events?follow=1")
            followed.extend(orjson.loads(line) for line in response.text.splitlines() if line)
            started = time.monotonic()
            next_turn = {"message": "stream 2 0 0", "stream": False}
            answer = http.post(f"{b.url}/sessions/{session}/messages", json=next_turn)
            next_turn_s = time.monotonic() - started
    by_seq = {event["seq"]: event for event in followed}
    resumed = [event for event in followed if event["type"] == "run_resumed"]
    completed = bool(followed) and followed[-1]["type"] == "run_completed" and followed[-1]["content"] == _ANSWER
    return Run(
        kill_after=kill_after,
        acknowledged=len(acknowledged),
        lost=sum(by_seq.get(event["seq"]) != event for event in acknowledged),
        gapless=[event["seq"] for event in followed] == list(range(len(followed))),
        resumed=len(resumed) == 1 and completed,
        resumed_s=resumed[0]["timestamp_ms"] / 1000 - killed if resumed else float("nan"),
        ending=f"resumed {len(resumed)} times, ended {followed[-1] if followed else 'with nothing'}",
        next_turn_s=next_turn_s,
        next_turn_ok=answer.status_code == 200 and answer.json().get("content", "").strip() == "chunk-0 chunk-1",
    )


def _config(spec: str, lease_s: float, agent_url: str) -> str:
    """Replicas on the Redis ``spec``; without one, the gateway's own SQLite files (its data directory)."""
    stores = f'[stores]\nsessions = "{spec}"\nevents = "{spec}"\n\n[stores.redis]\nlease_secs = {lease_s}\n\n'
    return (
        (stores if spec else "") + '[[agents]]\nname = "assistant"\nhandoffs = ["stream"]\n\n'
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
