"""Where the gateway's CPU per relayed chunk goes: the relay's stages, one after another, in this process.

    python -m bench.relay_stages [--quick]

The lines the scripted agent streams (``stream N 0 0``: artifact lines of one text part) are
cut into reads of ``PER_READ`` lines, as the gateway receives them, and each read goes
through the stages of ``AgentCall``'s relay in turn, each timed (CPU time, the cyclic GC on,
as in the gateway; medians of rounds), in microseconds per chunk:

- **split**: the NDJSON decoder (each line parsed by orjson);
- **check**: each line read into its stream item (``a2a_http._items``);
- **read**: its cost and budget checked, its progress event's fields written (``LineReader.read``);
- **event**: the progress events made (``RunRecorder.trusted_events``);
- **insert**: numbered, serialised and committed in one transaction (``sqlite._append_all``,
  on a file, in this thread);
- **add**: each event observed (counted, logged) and its line added to the result.

The baseline, timed in the same rounds, read by read between the stages: what a direct
reader of the agent's stream does with the same reads (``bench.gateway``'s direct client):
each line decoded and parsed into its event (``NDJSONDecoder``, ``parse_stream_event``).
Each stage is printed with its ratio to that baseline.

What it leaves out is what a read costs around those (the worker-thread round trip of the
commit, the follower woken and the response written, the read from the agent), which
``python -m bench.gateway`` measures with the rest, as chunks per second.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

import orjson

from bench._support import client_core, median
from gateway.calls.engine import AgentCall, CallSpec
from gateway.calls.tool import Mode
from gateway.event_log import MemoryEventLog
from gateway.event_log.sqlite import _SCHEMA, _append_all
from gateway.peers.a2a_http import _items, _Place
from gateway.peers.base import Peer
from gateway.recording.events import EventType
from gateway.recording.recorder import RunRecorder
from protocol import Message, NDJSONDecoder, parse_stream_event

PER_READ = 100
CHUNKS = 2000
STAGES = ("split", "check", "read", "event", "insert", "add")
BASELINE = "direct read"


def _reads(chunks: int) -> list[bytes]:
    """The agent server's artifact lines (as ``stream N 0 0`` writes them), ``PER_READ`` to a read."""
    lines = [
        orjson.dumps(
            {
                "seq": n + 1,
                "id": "0f88315c3344402f8752f879d27a51bd",
                "cost_usd": 0.0,
                "final": False,
                "type": "artifact",
                "artifact": {"parts": [{"type": "text", "text": f"chunk-{n} "}], "index": 0, "append": True},
            }
        )
        + b"\n"
        for n in range(chunks)
    ]
    return [b"".join(lines[start : start + PER_READ]) for start in range(0, chunks, PER_READ)]


def _no_peer() -> Peer:
    raise AssertionError("the stages take the lines as read: no peer is called")


def _round(reads: list[bytes], conn: sqlite3.Connection, chunks: int) -> dict[str, float]:
    """One stream's reads through every stage, and through the direct reader: seconds of CPU each."""
    recorder = RunRecorder(MemoryEventLog())
    spec = CallSpec(
        agent="http://127.0.0.1:9", mode=Mode(kind="streaming"), timeout_s=30.0, idle_timeout_s=30.0,
        cancel_timeout_s=1.0, tool="stream",
    )  # fmt: skip
    call = AgentCall(_no_peer, recorder, spec, Message.user("stream"), task_id="t")
    decoder, place, direct = NDJSONDecoder(), _Place("t"), NDJSONDecoder()
    spent = dict.fromkeys((*STAGES, BASELINE), 0.0)
    index = 0
    for read in reads:
        started = time.process_time()
        parsed = [parse_stream_event(line) for line in direct.feed(read)]
        clock = [time.process_time()]
        spent[BASELINE] += clock[0] - started
        del parsed
        decoded = decoder.feed(read)
        clock.append(time.process_time())
        items = _items(decoded, place)
        del decoded
        clock.append(time.process_time())
        lines = []
        for item in items:
            lines.append(call._lines.read(item, call.result.cost_usd, index))
            index += 1
        clock.append(time.process_time())
        events = recorder.trusted_events(EventType.AGENT_TOOL_PROGRESS, [line.progress or {} for line in lines])
        clock.append(time.process_time())
        stored = _append_all(conn, events, [], [])
        clock.append(time.process_time())
        for event, line in zip(stored, lines, strict=True):
            recorder._observe(event)
            call.result.chunks += 1
            line.add_to(call.result)
        clock.append(time.process_time())
        for stage, start, end in zip(STAGES, clock, clock[1:], strict=False):
            spent[stage] += end - start
    call.result.settle()
    assert call.result.chunks == chunks
    return spent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.relay_stages", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round")
    args = parser.parse_args(argv)
    rounds, chunks = (1, 200) if args.quick else (7, CHUNKS)
    reads = _reads(chunks)
    with client_core(), tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "events.db", isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            _round(reads, conn, chunks)  # warm up
            spent = [_round(reads, conn, chunks) for _ in range(rounds)]
        finally:
            conn.close()
    per_chunk = {stage: median([round_[stage] for round_ in spent]) / chunks * 1e6 for stage in (*STAGES, BASELINE)}
    baseline = per_chunk[BASELINE]
    print(
        f"the relay's stages, CPU us per chunk, reads of {PER_READ} lines, median of {rounds}; ratio to the {BASELINE}:"
    )
    for stage in STAGES:
        print(f"  {stage:12s} {per_chunk[stage]:6.2f}  {per_chunk[stage] / baseline:5.2f}")
    total = sum(per_chunk[stage] for stage in STAGES)
    print(f"  {'all':12s} {total:6.2f}  {total / baseline:5.2f}")
    print(
        f"  {BASELINE:12s} {baseline:6.2f}  {1.0:5.2f}  (NDJSONDecoder + parse_stream_event, what a direct reader does)"
    )


if __name__ == "__main__":
    main()
